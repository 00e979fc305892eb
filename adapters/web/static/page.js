// The memory page's script: it makes the page's plain forms work in place. Each change posts its
// form with X-Nod-Inline, says the answer beside the form (an error as an alert), and refreshes
// only the parts of the page marked data-region from a fresh copy, so nothing jumps to the top
// and focus stays where the owner was. Search and filters run on every key press.
// No framework and nothing from outside the server (the Content-Security-Policy allows only 'self').
"use strict";

const PAGE = "/settings/memory";
document.documentElement.classList.add("js");

// ---- what an action said, beside it -------------------------------------------------------

function say(target, text, error) {
  document.querySelectorAll("[data-said]").forEach((old) => old.remove());
  if (!target || !text) {
    return null;
  }
  const line = document.createElement("p");
  line.className = error ? "said error" : "said";
  line.setAttribute("role", error ? "alert" : "status");
  line.tabIndex = -1;
  line.dataset.said = "";
  const heading = target.matches("section.area, section.settings") ? target.querySelector("h2") : null;
  if (heading) {
    heading.after(line);
  } else {
    target.append(line);
  }
  // a live region announces a change of its text, so the text arrives just after the element
  window.requestAnimationFrame(() => { line.textContent = text; });
  return line;
}

// ---- search and filters, without a reload ---------------------------------------------------

const find = document.querySelector("form.find");
const foundLine = document.getElementById("found");
const foundCount = document.getElementById("found-count");

function folded(text) {
  return text.normalize("NFKD").toLowerCase().replace(/\p{M}/gu, "").replace(/ß/g, "ss").split(/\s+/).filter(Boolean);
}

function applyFilters() {
  const data = new FormData(find);
  const words = folded(String(data.get("q") || ""));
  const area = data.get("area") || "";
  const status = data.get("status") || "";
  const sensitive = data.get("sensitive") === "1";
  const active = words.length > 0 || Boolean(area) || Boolean(status) || sensitive;
  let shown = 0;
  let total = 0;
  for (const section of document.querySelectorAll("section[data-area]")) {
    let here = 0;
    for (const note of section.querySelectorAll("article.note")) {
      total += 1;
      const keep = (!area || section.dataset.area === area) && (!status || note.dataset.status === status)
        && (!sensitive || "sensitive" in note.dataset) && words.every((word) => note.dataset.find.includes(word));
      note.hidden = !keep;
      here += keep ? 1 : 0;
    }
    shown += here;
    section.hidden = active && here === 0;
  }
  for (const other of document.querySelectorAll("#skills, #schedules, #archive, #settings")) {
    other.hidden = active;
  }
  document.getElementById("no-match").hidden = !active || shown > 0;
  // the line is changed, never rebuilt: a click on its link must find the link still there
  const count = active ? `${shown} of ${total} notes match.` : "";
  if (foundCount.textContent !== count) {
    foundCount.textContent = count;
  }
  foundLine.hidden = !active;
  const query = new URLSearchParams([...data].filter(([, value]) => value !== ""));
  window.history.replaceState(null, "", query.toString() ? `${PAGE}?${query}` : PAGE + window.location.hash);
}

find.addEventListener("input", applyFilters);
find.addEventListener("change", applyFilters);

// ---- refreshing the changed parts of the page -------------------------------------------------

async function refresh() {
  const response = await fetch(PAGE, { credentials: "same-origin", headers: { Accept: "text/html" } });
  if (!response.ok) {
    return;
  }
  const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
  const focused = document.activeElement && document.activeElement.id;
  const open = [...document.querySelectorAll("details.sources[open][id]")].map((details) => details.id);
  for (const region of document.querySelectorAll("[data-region]")) {
    const next = fresh.getElementById(region.id);
    if (next && next.outerHTML !== region.outerHTML) {
      region.replaceWith(document.importNode(next, true));
    }
  }
  open.forEach((id) => { const details = document.getElementById(id); if (details) { details.open = true; } });
  applyFilters();
  const lost = !document.activeElement || document.activeElement === document.body;
  if (lost && focused && document.getElementById(focused)) {
    document.getElementById(focused).focus();
  }
  watchGmail();
}

// ---- posting a form in place ----------------------------------------------------------------

function anchorOf(form) {
  return form.closest("article[id], details[id], section[id], div[data-region]");
}

async function send(form) {
  const button = form.querySelector("button[type=submit]");
  const here = anchorOf(form);
  let response = null;
  let answer;
  if (button) { button.disabled = true; }
  form.setAttribute("aria-busy", "true");
  try {
    response = await fetch(form.action, {
      method: "POST", body: new FormData(form), credentials: "same-origin",
      headers: { "X-Nod-Inline": "1", Accept: "application/json" },
    });
    answer = await response.json();
  } catch (problem) {
    answer = { error: response ? `The server answered ${response.status}.` : "Nod did not answer: check the connection and try again." };
  }
  if (button) { button.disabled = false; }
  form.removeAttribute("aria-busy");
  if (!response || !response.ok) {
    if (response && response.status === 409) {
      await refresh();  // show the note as it is now
    }
    const target = form.isConnected ? form : document.getElementById(answer.at) || here;
    say(target, answer.error || "That did not work.", true);
    return;
  }
  if (answer.go) {
    window.location.assign(answer.go);
    return;
  }
  if (typeof answer.html === "string") {
    document.getElementById("candidates").innerHTML = answer.html;  // rendered and escaped by the server
  }
  const keep = form.isConnected && form.matches(".add, .import, .restore-backup") ? form : null;
  await refresh();
  if (keep) {
    keep.reset();
  }
  const line = say(document.getElementById(answer.at) || (here && here.isConnected ? here : null)
    || document.getElementById("top"), answer.said, false);
  const lost = !document.activeElement || document.activeElement === document.body || !document.activeElement.isConnected;
  if (line && lost) {
    line.focus();
  }
}

// ---- a note's edit form, made when asked for from one template --------------------------------

function openEdit(note) {
  let form = note.querySelector("form.edit");
  if (!form) {
    form = document.getElementById("note-edit").content.firstElementChild.cloneNode(true);
    form.action = `${PAGE}/note/${note.dataset.path}/edit`;
    form.elements.etag.value = note.dataset.etag;
    form.elements.text.value = note.querySelector(".text").textContent;
    form.elements.abstract.value = note.dataset.abstract;
    form.elements.expires.value = note.dataset.expires;
    note.querySelector(".foot").after(form);
  }
  note.querySelector("form[data-edit] button").setAttribute("aria-expanded", "true");
  const field = form.elements.text;
  field.focus();
  field.setSelectionRange(field.value.length, field.value.length);  // type on from the end
}

function closeEdit(form) {
  const note = form.closest("article");
  form.remove();
  const button = note.querySelector("form[data-edit] button");
  button.setAttribute("aria-expanded", "false");
  button.focus();
}

document.addEventListener("submit", (event) => {
  const form = event.target;
  if (form === find) {
    event.preventDefault();
    applyFilters();
  } else if (form.matches("form[data-edit]")) {
    event.preventDefault();
    openEdit(form.closest("article"));
  } else if (form.matches("form[data-inline]")) {
    event.preventDefault();
    send(form);
  }
});

document.addEventListener("click", (event) => {
  const clear = event.target.closest("a[data-clear]");
  if (clear) {
    event.preventDefault();
    find.reset();
    find.querySelectorAll("input[type=search]").forEach((input) => { input.value = ""; });
    find.querySelectorAll("select").forEach((select) => { select.value = ""; });
    find.querySelectorAll("input[type=checkbox]").forEach((box) => { box.checked = false; });
    applyFilters();
    document.getElementById("find-q").focus();
    return;
  }
  if (event.target.closest("button[data-cancel]")) {
    closeEdit(event.target.closest("form"));
    return;
  }
  // one menu open at a time; a click elsewhere closes it
  for (const menu of document.querySelectorAll("details.menu[open], details.ask[open]")) {
    if (!menu.contains(event.target)) {
      menu.open = false;
    }
  }
});

document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape") {
    return;
  }
  const edit = event.target.closest && event.target.closest("form.edit");
  if (edit && edit.closest("article.note") && !edit.closest("details")) {
    closeEdit(edit);
    return;
  }
  const menu = event.target.closest && event.target.closest("details[open]");
  if (menu && menu.matches(".menu, .ask")) {
    menu.open = false;
    menu.querySelector("summary").focus();
  }
});

document.addEventListener("change", (event) => {
  const form = event.target.closest("form[data-auto]");
  if (form) {
    send(form);
  }
});

// while a Gmail run goes on, look again every two seconds and show its result when it ends
let polling = false;

function watchGmail() {
  if (polling || !document.querySelector(".gmail[data-running]")) {
    return;
  }
  polling = true;
  const poll = window.setInterval(async () => {
    try {
      const response = await fetch("/api/memory", { credentials: "same-origin" });
      const view = await response.json();
      if (!view.gmail || !view.gmail.running) {
        window.clearInterval(poll);
        polling = false;
        await refresh();
      }
    } catch (problem) {
      window.clearInterval(poll);
      polling = false;
    }
  }, 2000);
}

applyFilters();
watchGmail();
const first = document.querySelector("[data-said]");
if (first) {
  first.focus();  // after a form posted without the script: the answer is where the owner acted
}
