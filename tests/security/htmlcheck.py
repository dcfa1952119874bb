"""What the Content-Security-Policy forbids, found in served HTML: inline scripts (other than
json_script data), on* event handlers, javascript: URLs, style="" attributes and <style> elements."""

from html.parser import HTMLParser

DATA_SCRIPT_TYPES = {"application/json", "application/ld+json"}


class InlineCodeFinder(HTMLParser):
    def __init__(self, allow_styles=False):
        super().__init__(convert_charrefs=True)
        self.allow_styles = allow_styles
        self.problems: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        where = f"<{tag}{' id=' + attrs['id'] if attrs.get('id') else ''}>"
        if tag == "script" and not attrs.get("src") and (attrs.get("type") or "").lower() not in DATA_SCRIPT_TYPES:
            self.problems.append(f"inline script {where}")
        if tag == "style" and not self.allow_styles:
            self.problems.append(f"<style> element {where}")
        for name, value in attrs.items():
            if name.startswith("on"):
                self.problems.append(f"event handler {name}= on {where}")
            if name == "style" and not self.allow_styles:
                self.problems.append(f"style= attribute on {where}")
            if name in ("href", "src", "action", "formaction") and (value or "").strip().lower().startswith(
                    "javascript:"):
                self.problems.append(f"javascript: URL in {name}= on {where}")
            if name.startswith("hx-on"):
                self.problems.append(f"{name}= (htmx eval) on {where}")


def inline_code(html: str, allow_styles=False) -> list[str]:
    finder = InlineCodeFinder(allow_styles)
    finder.feed(html)
    return finder.problems


def directives(header: str) -> dict[str, list[str]]:
    parsed = {}
    for part in header.split(";"):
        words = part.split()
        if words:
            parsed[words[0]] = words[1:]
    return parsed
