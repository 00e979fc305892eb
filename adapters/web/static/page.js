// The memory page's buttons: each calls the JSON API with the page's CSRF token, then reloads.
// No framework and nothing from outside the server (the Content-Security-Policy allows only 'self').
"use strict";

const csrf = document.querySelector('meta[name="csrf-token"]').content;
const status = document.getElementById("status");

function say(text) {
  status.textContent = text;
}

// what the last action said survives the reload that shows its result
say(window.sessionStorage.getItem("nod-status") || "");
window.sessionStorage.removeItem("nod-status");

async function call(method, url, body) {
  const response = await fetch(url, {
    method,
    headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
  });
  const answer = await response.json().catch(() => ({ error: "The server's answer could not be read." }));
  if (!response.ok) {
    throw new Error(answer.error || `The server answered ${response.status}.`);
  }
  return answer;
}

async function act(work, done) {
  try {
    const answer = await work();
    window.sessionStorage.setItem("nod-status", typeof done === "function" ? done(answer) : done);
    window.location.reload();
  } catch (error) {
    say(error.message);
  }
}

function notePath(element) {
  const note = element.closest(".note");
  return { note, path: note.dataset.path, etag: note.dataset.etag };
}

function noteUrl(path) {
  return "/api/memory/notes/" + path.split("/").map(encodeURIComponent).join("/");
}

// a note's edit form is made when asked for, from one template: the page stays half the size
function editForm(note) {
  let form = note.querySelector("form.edit");
  if (!form) {
    form = document.getElementById("note-edit").content.firstElementChild.cloneNode(true);
    form.elements.text.value = note.querySelector(".text").textContent;
    form.elements.abstract.value = note.dataset.abstract;
    form.elements.expires.value = note.dataset.expires;
    note.append(form);
  }
  return form;
}

function toggleEdit(note, editing) {
  editForm(note).hidden = !editing;
  note.querySelector(".actions").hidden = editing;
  if (editing) {
    const field = note.querySelector("form.edit textarea, form.edit input");
    field.focus();
    field.setSelectionRange(field.value.length, field.value.length);  // type on from the end
  }
}

// the Gmail card's buttons: Connect goes to Google's consent screen, which comes back to the page
function gmail(action) {
  if (action === "gmail-connect") {
    call("POST", "/api/memory/gmail/connect", {}).then((answer) => window.location.assign(answer.url), (error) => say(error.message));
  } else if (action === "gmail-refresh") {
    act(() => call("POST", "/api/memory/gmail/refresh", {}), "Learning your writing style from your sent email…");
  } else if (action === "gmail-disconnect") {
    if (window.confirm("Disconnect Gmail? Nod's access is revoked at Google and its token deleted; the style note stays until you forget it.")) {
      act(() => call("POST", "/api/memory/gmail/disconnect", {}), (answer) => answer.revoked
        ? "Gmail disconnected; Google revoked Nod's access."
        : "Gmail disconnected here; Google did not confirm the revocation, so remove Nod under your Google Account's third-party access.");
    }
  }
}

// while a run goes on, look again every two seconds and show its result when it ends
if (document.querySelector(".gmail[data-running]")) {
  const poll = window.setInterval(async () => {
    try {
      const view = await call("GET", "/api/memory");
      if (!view.gmail.running) {
        window.clearInterval(poll);
        window.location.reload();
      }
    } catch (error) {
      window.clearInterval(poll);
      say(error.message);
    }
  }, 2000);
}

document.addEventListener("click", (event) => {
  const button = event.target.closest("button[data-action]");
  if (!button) {
    return;
  }
  const action = button.dataset.action;
  if (action.startsWith("gmail-")) {
    gmail(action);
    return;
  }
  const { note, path, etag } = notePath(button);
  if (action === "edit") {
    toggleEdit(note, true);
  } else if (action === "cancel") {
    toggleEdit(note, false);
  } else if (action === "confirm") {
    act(() => call("POST", noteUrl(path) + "/confirm", { etag }), "Confirmed.");
  } else if (action === "forget") {
    if (window.confirm(`Forget ${path} and every earlier version of it?`)) {
      act(() => call("DELETE", noteUrl(path), { etag }), "Forgotten.");
    }
  } else if (action === "restore") {
    act(() => call("POST", `/api/memory/archive/${note.dataset.index}/restore`, { etag }), "Restored.");
  } else if (action === "cancel-schedule") {
    const id = note.dataset.schedule;
    if (window.confirm("Cancel this reminder?")) {
      act(() => call("DELETE", "/api/memory/schedules/" + encodeURIComponent(id)), "Cancelled.");
    }
  } else if (action === "forget-skill") {
    const name = note.dataset.skill;
    if (window.confirm(`Forget the skill ${name}?`)) {
      act(() => call("DELETE", "/api/memory/skills/" + encodeURIComponent(name), { etag }), "Forgotten.");
    }
  }
});

document.addEventListener("change", (event) => {
  const input = event.target.closest("input[data-setting]");
  if (input) {
    act(() => call("PUT", "/api/memory/settings", { [input.dataset.setting]: input.checked }), "Saved.");
  }
});

function previewList(form, notes) {
  const list = form.querySelector(".candidates");
  list.replaceChildren();
  notes.forEach((note, n) => {
    const item = document.createElement("li");
    const label = document.createElement("label");
    const box = document.createElement("input");
    box.type = "checkbox";
    box.checked = note.skip === null;
    box.disabled = note.skip !== null;
    box.dataset.area = note.area;
    box.dataset.text = note.text;
    box.id = `candidate-${n}`;
    label.append(box, ` ${note.area}: ${note.text}`);
    if (note.skip !== null) {
      const why = document.createElement("small");
      why.textContent = ` (skipped: ${note.skip})`;
      label.append(why);
    }
    item.append(label);
    list.append(item);
  });
  form.hidden = notes.length === 0;
}

document.addEventListener("submit", async (event) => {
  const form = event.target;
  event.preventDefault();
  const data = new FormData(form);
  const action = form.dataset.action;
  if (action === "add") {
    const path = `${data.get("area")}/${data.get("slug")}`;
    act(() => call("POST", "/api/memory/notes", { path, text: data.get("text") }), "Added.");
  } else if (action === "rewrite") {
    const { path, etag } = notePath(form);
    const body = { etag, text: data.get("text"), abstract: data.get("abstract") || null, expires: data.get("expires") || null };
    act(() => call("PUT", noteUrl(path), body), "Saved.");
  } else if (action === "edit-skill") {
    const note = form.closest(".note");
    const body = { etag: note.dataset.etag, description: data.get("description"), body: data.get("body") };
    act(() => call("PUT", "/api/memory/skills/" + encodeURIComponent(note.dataset.skill), body), "Saved.");
  } else if (action === "preview") {
    try {
      const answer = await call("POST", "/api/memory/import/preview", { text: data.get("text") });
      previewList(document.querySelector("form.chosen"), answer.notes);
      say(`${answer.notes.length} notes found; untick what you do not want.`);
    } catch (error) {
      say(error.message);
    }
  } else if (action === "import") {
    const notes = [...form.querySelectorAll("input[type=checkbox]:checked")].map((box) => ({ area: box.dataset.area, text: box.dataset.text }));
    act(() => call("POST", "/api/memory/import", { notes }), (answer) => {
      const skipped = answer.skipped.map((s) => `${s.text} (${s.reason})`).join("; ");
      return `Imported ${answer.saved.length} notes.` + (skipped ? ` Skipped: ${skipped}.` : "");
    });
  }
});
