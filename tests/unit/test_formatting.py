"""A reply's Markdown per channel: exact Telegram HTML and WhatsApp text, and parts that never break markup."""

from __future__ import annotations

import random
from html.parser import HTMLParser

import pytest

from adapters.local.chat import plain_text
from adapters.telegram.formatting import TELEGRAM_LIMIT, html_parts, to_html, visible_text
from adapters.whatsapp.formatting import WHATSAPP_LIMIT, whatsapp_parts
from tests.fakes.telegram_html import parse_html

TELEGRAM_TAGS = {"b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "a", "code", "pre", "blockquote",
                 "tg-spoiler", "span"}

# (Markdown, Telegram HTML, WhatsApp text)
CASES = [
    pytest.param(
        "- one\n- two\n  - two a\n  - two b\n- three\n\n3. first\n4. second\n   - inner\n     more",
        "• one\n• two\n  • two a\n  • two b\n• three\n\n3. first\n4. second\n   • inner\n     more",
        "- one\n- two\n  - two a\n  - two b\n- three\n\n3. first\n4. second\n   - inner\n     more",
        id="nested lists"),
    pytest.param(
        "See [the docs](https://example.org/a_b_(c)) and https://example.org/x_y_z, "
        '<https://example.org/q?a=1&b="2"> or [mail](mailto:a@b.org).',
        'See <a href="https://example.org/a_b_(c)">the docs</a> and https://example.org/x_y_z, '
        '<a href="https://example.org/q?a=1&amp;b=%222%22">https://example.org/q?a=1&amp;b="2"</a> or '
        '<a href="mailto:a@b.org">mail</a>.',
        'See the docs (https://example.org/a_b_(c)) and https://example.org/x_y_z, https://example.org/q?a=1&b="2" '
        "or mail (a@b.org).",
        id="links with underscores and parentheses"),
    pytest.param(
        "[ftp](ftp://x.org/f), [here](/local), [chat](tg://resolve?domain=nod) and [x](javascript:alert(1))",
        'ftp (ftp://x.org/f), here (/local), <a href="tg://resolve?domain=nod">chat</a> and [x](javascript:alert(1))',
        "ftp (ftp://x.org/f), here (/local), chat (tg://resolve?domain=nod) and [x](javascript:alert(1))",
        id="only http https tg mailto links are tags"),
    pytest.param(
        "Use `a < b && c` or:\n\n```js\nif (a < b && c) {\n  x = '<p>';\n}\n```",
        "Use <code>a &lt; b &amp;&amp; c</code> or:\n\n"
        "<pre><code class=\"language-js\">if (a &lt; b &amp;&amp; c) {\n  x = '&lt;p&gt;';\n}</code></pre>",
        "Use `a < b && c` or:\n\n```\nif (a < b && c) {\n  x = '<p>';\n}\n```",
        id="code with < and &"),
    pytest.param(
        "> Be kind.\n> Always.\n>\n> > Nested.\n\nSaid someone.",
        "<blockquote>Be kind.\nAlways.\n\nNested.</blockquote>\n\nSaid someone.",  # Telegram has one quote level
        "> Be kind.\n> Always.\n>\n> > Nested.\n\nSaid someone.",
        id="quote"),
    pytest.param(
        "# Plan *today*\n\nDetails **here**.\n\n## Step two",
        "<b>Plan <i>today</i></b>\n\nDetails <b>here</b>.\n\n<b>Step two</b>",
        "*Plan _today_*\n\nDetails *here*.\n\n*Step two*",
        id="headings"),
    pytest.param(
        "**bold**, *italic*, _also_, ~~gone~~, ***both***, **bold with *italic* inside**, # **not *twice***",
        "<b>bold</b>, <i>italic</i>, <i>also</i>, <s>gone</s>, <i><b>both</b></i>, <b>bold with <i>italic</i> inside</b>, "
        "# <b>not <i>twice</i></b>",
        "*bold*, _italic_, _also_, ~gone~, _*both*_, *bold with _italic_ inside*, # *not _twice_*",
        id="bold italic strike"),
    pytest.param(
        "# A **bold** title",
        "<b>A bold title</b>",
        "*A bold title*",  # a mark is not opened inside itself: WhatsApp's * pairs stay pairs
        id="bold inside a heading"),
    pytest.param(
        "<b>not bold</b> 2 * 3 ** 4, a lone ` tick & done; snake_case_name **not closed",
        "&lt;b&gt;not bold&lt;/b&gt; 2 * 3 ** 4, a lone ` tick &amp; done; snake_case_name **not closed",
        "<b>not bold</b> 2 * 3 ** 4, a lone ` tick & done; snake_case_name **not closed",
        id="raw html and stray marks are text"),
    pytest.param(
        "![a cat](https://x.org/cat.png) then\n\n| Day | Plan |\n|-----|------|\n| Mon | **gym** |\n| Tue | rest |",
        "a cat (https://x.org/cat.png) then\n\nDay | Plan\nMon | <b>gym</b>\nTue | rest",
        "a cat (https://x.org/cat.png) then\n\nDay | Plan\nMon | *gym*\nTue | rest",
        id="image and table fall back to text"),
    pytest.param(
        "Your notes:\n- one\n- two\n\n# Next\nText right under",
        "Your notes:\n• one\n• two\n\n<b>Next</b>\nText right under",
        "Your notes:\n- one\n- two\n\n*Next*\nText right under",
        id="no blank line is added where the author wrote none"),
    pytest.param(
        "line one\nline two  \nline three\n\n---\n\nafter",
        "line one\nline two\nline three\n\n———\n\nafter",
        "line one\nline two\nline three\n\n———\n\nafter",
        id="line breaks and a rule"),
]


class _Balance(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in TELEGRAM_TAGS:
            self.errors.append(f"<{tag}> is not a Telegram tag")
        self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open.pop() != tag:
            self.errors.append(f"</{tag}> closes nothing open")


def assert_balanced(part: str) -> None:
    checker = _Balance()
    checker.feed(part)
    checker.close()
    assert not checker.errors and not checker.open, (checker.errors, checker.open, part)


@pytest.mark.parametrize(("markdown", "telegram", "whatsapp"), CASES)
def test_each_channel_writes_the_one_reading(markdown: str, telegram: str, whatsapp: str) -> None:
    assert html_parts(markdown) == [telegram] and to_html(markdown) == telegram
    assert_balanced(telegram)
    assert whatsapp_parts(markdown) == [whatsapp]


def test_the_terminal_gets_plain_text_and_whatsapp_the_numbered_choices_as_written() -> None:
    assert plain_text("# Plan\n\n**Bold** and `code`, [docs](https://x.org/a_b) ~~no~~\n\n> q") == (
        "Plan\n\nBold and code, docs (https://x.org/a_b) no\n\n> q")
    assert plain_text("Pick:", "1. *Tue*\n2. Wed") == "Pick:\n\n1. *Tue*\n2. Wed"
    # the choices stay their own numbered lines even after a numbered list in the text
    assert whatsapp_parts("Steps:\n\n1. a\n2. b", "1. Tuesday\n2. Wednesday") == [
        "Steps:\n\n1. a\n2. b\n\n1. Tuesday\n2. Wednesday"]
    assert html_parts("   ") == [] and whatsapp_parts("") == []


INTRO = ("Here is the plan. " * 111).strip()  # 1,997 characters
LINES = [f"print({n:03d}, a < b & c)" for n in range(300)]  # 22 characters a line, 29 as HTML
OUTRO = ("That is all for today. " * 61).strip()
LONG = f"{INTRO}\n\n```python\n" + "\n".join(LINES) + f"\n```\n\n{OUTRO}"
PRE, END_PRE = '<pre><code class="language-python">', "</code></pre>"


def _html_lines(lines: list[str]) -> str:
    return "\n".join(line.replace("&", "&amp;").replace("<", "&lt;") for line in lines)


def test_a_10000_character_reply_cuts_its_code_block_and_reopens_it() -> None:
    assert len(LONG) > 10_000
    parts = html_parts(LONG)
    assert parts == [
        f"{INTRO}\n\n{PRE}{_html_lines(LINES[:70])}{END_PRE}",  # the block starts where there is room
        f"{PRE}{_html_lines(LINES[70:209])}{END_PRE}",
        f"{PRE}{_html_lines(LINES[209:])}{END_PRE}\n\n{OUTRO}",
    ]
    assert all(len(p) <= TELEGRAM_LIMIT for p in parts)
    for part in parts:
        assert_balanced(part)
    whatsapp = whatsapp_parts(LONG)
    sentences = INTRO.split(". ")
    assert whatsapp == [
        ". ".join(sentences[:88]) + ".",  # 1,997 characters do not fit 1,600: cut at a sentence end
        ". ".join(sentences[88:]) + "\n\n```\n" + "\n".join(LINES[:53]) + "\n```",
        *("```\n" + "\n".join(LINES[n:n + 72]) + "\n```" for n in (53, 125, 197)),
        "```\n" + "\n".join(LINES[269:]) + "\n```",
        OUTRO,  # it fits a message of its own, so it is not cut
    ]
    assert all(len(p) <= WHATSAPP_LIMIT and p.count("```") % 2 == 0 for p in whatsapp)


RICH = "\n\n".join([
    "# Trip to *Porto*",
    "**" + ("A long bold paragraph with & and <angles> that runs on. " * 40).strip() + "**",
    "> " + "Quoted wisdom, [with a link](https://example.org/w_(x)) inside. " * 30 + "\n>\n> - and a list\n>   in it",
    "\n".join(f"- item {n} with `code < {n}` and ~~old~~ *new* text" for n in range(60)),
    "```\n" + "\n".join(f"    indented <line> {n} && more" for n in range(200)) + "\n```",
    "Done.",
])


def _letters(text: str) -> str:
    return "".join(text.split())


def _unmarked(whatsapp: str) -> str:
    return _letters(whatsapp.translate(str.maketrans("", "", "*_~`>")))


@pytest.mark.parametrize("limit", [TELEGRAM_LIMIT, 1_000, 300, 120])
def test_no_part_breaks_a_tag_or_an_entity_or_exceeds_the_limit(limit: int) -> None:
    parts = html_parts(RICH, limit)
    assert len(parts) > 1
    for part in parts:
        assert len(part) <= limit and part.strip() == part
        assert_balanced(part)
    whole = visible_text(to_html(RICH))
    assert _letters("".join(visible_text(p) for p in parts)) == _letters(whole)  # nothing lost but whitespace at cuts
    assert "    indented &lt;line&gt; 150" in "".join(parts)  # a cut drops one line break, never the indentation


@pytest.mark.parametrize("limit", [WHATSAPP_LIMIT, 300])
def test_whatsapp_parts_keep_their_fences_closed(limit: int) -> None:
    parts = whatsapp_parts(RICH, limit=limit)
    assert all(len(p) <= limit and p.count("```") % 2 == 0 for p in parts)
    whole = whatsapp_parts(RICH, limit=100_000)[0]
    lines = [line for p in parts for line in p.split("\n")]
    assert all(line.startswith("> ") for line in lines if "Quoted wisdom" in line)  # a continued quote is still a quote
    assert _unmarked("".join(parts)) == _unmarked(whole)  # nothing lost but whitespace at cuts and marks reopened


FRAGMENTS = ["word", "**bold words here**", "*it*", "~~gone~~", "`a<b&c`", "[link](https://x.org/a_(b))", "&", "<tag>",
             "Sentence ends.", "\n", "\n\n", "\n\n- item", "\n  - nested item", "\n\n1. one", "\n\n> quote line", "\n> more",
             "\n\n```py\nx < 1\n    y && z\n\n```\n\n", "\n\n# Head", " ", " ", "ü😀", "longwordwithoutanyspaces" * 5]


@pytest.mark.parametrize("seed", range(20))
def test_mixed_markdown_at_any_limit_gives_parts_telegram_accepts(seed: int) -> None:
    rng = random.Random(seed)
    markdown = "".join(rng.choice(FRAGMENTS) + rng.choice(["", " "]) for _ in range(rng.randint(5, 300)))
    whole = visible_text(to_html(markdown))
    for limit in (60, 700, TELEGRAM_LIMIT):
        parts = html_parts(markdown, limit)
        for part in parts:
            assert 0 < len(part) <= limit and part.strip()
            assert_balanced(part)
            assert parse_html(part).text == visible_text(part)  # Telegram's own reading of the tags
        assert _letters("".join(visible_text(p) for p in parts)) == _letters(whole)
        whatsapp = whatsapp_parts(markdown, limit=limit)
        assert all(0 < len(p) <= limit and p.count("```") % 2 == 0 for p in whatsapp)
        assert _unmarked("".join(whatsapp)) == _unmarked("".join(whatsapp_parts(markdown, limit=10**9)))


def test_nesting_deeper_than_the_stack_or_the_parser_loses_no_words() -> None:
    stars = "*" * 1000 + "x" + "*" * 1000  # a RecursionError in the tree: read as plain text instead
    assert "x" in "".join(html_parts(stars)) and "x" in "".join(whatsapp_parts(stars))
    assert "the answer is 42" in "".join(html_parts("> " * 20 + "the answer is 42"))
    steps = "".join("  " * i + f"- step {i}\n" for i in range(12))
    assert all(f"step {i}" in "".join(html_parts(steps)) for i in range(12))
