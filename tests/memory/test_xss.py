"""Memory text is untrusted: scripts, handlers and javascript: links are shown inert."""

from __future__ import annotations

from memory.rendering import render_markdown
from tests.conftest import client_for
from tests.memory.factories import write_linked

HOSTILE = """# Notes <script>alert('x')</script>

[click me](javascript:alert(1)) and [data](data:text/html;base64,PHNjcmlwdD4=)
<img src=x onerror="alert(2)"> <a href="JaVaScRiPt:alert(3)" onclick="alert(4)">raw</a>
<iframe src="https://evil.test"></iframe><style>body{display:none}</style>
[ok](https://example.com) [peer](people/jane.md)
"""


def test_render_strips_active_content():
    html = render_markdown(HOSTILE, fs_id=7)
    lowered = html.lower()
    for needle in ("<script", "javascript:", "onerror", "onclick", "<iframe", "<style", "data:text", "<img"):
        assert needle not in lowered, needle
    assert '<a href="https://example.com" rel="noopener noreferrer nofollow">ok</a>' in html
    assert '<a href="/memory/7/files/people/jane.md"' in html


def test_file_page_shows_hostile_memory_inert(cast):
    fs = cast.team.memory_filesystem
    write_linked(fs, {"people/jane.md": "Jane", "notes/evil.md": HOSTILE})
    html = client_for(cast.member).get(f"/memory/{fs.pk}/files/notes/evil.md").content.decode().lower()
    rendered = html.split("data-rendered>", 1)[1].split("</article>", 1)[0]
    assert "<script" not in rendered and "javascript:" not in rendered and "onerror" not in rendered
    # The history and diff show the raw text, escaped.
    history = client_for(cast.member).get(f"/memory/{fs.pk}/history/notes/evil.md").content.decode()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in history
    assert "<script>alert" not in history
    preview = client_for(cast.admin).post(f"/memory/{fs.pk}/preview", {"content": HOSTILE}).content.decode().lower()
    assert "<script" not in preview and "javascript:" not in preview


def test_history_entries_show_hostile_revision_details_inert(cast):
    from memory import services
    from memory.services import Change

    fs = cast.team.memory_filesystem
    write_linked(fs, {"notes/a.md": "one"})
    services.changes_apply(filesystem=fs, changes=[Change("write", "notes/a.md", content="two")],
                           author_kind="memory_agent", message="<img src=x onerror=alert(1)> & done",
                           source_kind="<b>slack</b>", source_id='"><script>x</script>')
    html = client_for(cast.member).get(f"/memory/{fs.pk}/history/notes/a.md").content.decode()
    assert "<img src=x" not in html and "<script>x" not in html and "<b>slack" not in html
    assert "&lt;img src=x onerror=alert(1)&gt; &amp; done" in html
    assert "from &lt;b&gt;slack&lt;/b&gt; &quot;&gt;&lt;script&gt;x&lt;/script&gt;" in html
