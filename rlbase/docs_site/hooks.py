"""MkDocs hooks of rlbase's site (``hooks:`` in the generated mkdocs.yml).

- the API pages (``api_pages``) are added as generated pages;
- a link from a page to a file of the repository outside rlbase/docs (an example script, a
  committed plot) is served from a copy under ``repo/`` in the site, so it is not dead; a link
  to a file that does not exist is left for MkDocs to report (an error: the build is strict).
"""

from __future__ import annotations

import os
import posixpath
import re
from typing import Any

from mkdocs.structure.files import File, Files

from rlbase.docs_site.api_pages import pages

LINK = re.compile(r"(\]\()(\.\./[^)\s#]+)")
REPO_PREFIX = "repo"


def _outside_target(page_uri: str, url: str, docs_dir: str) -> str | None:
    """The repository-relative path a link escaping the docs points to, when the file exists."""
    target = posixpath.normpath(posixpath.join(posixpath.dirname(page_uri), url))
    if not target.startswith("../"):
        return None
    path = os.path.normpath(os.path.join(docs_dir, target))
    repo = os.path.dirname(os.path.dirname(docs_dir))  # rlbase/docs -> the repository
    relative = os.path.relpath(path, repo)
    if relative.startswith("..") or not os.path.exists(path):
        return None
    return relative.replace(os.sep, "/")


def on_files(files: Files, config: Any) -> Files:
    for uri, text in pages().items():
        files.append(File.generated(config, uri, content=text))
    # Repository files the pages link to (found in the Markdown before it is rendered).
    docs_dir = config["docs_dir"]
    for page in [f for f in files if f.src_uri.endswith(".md")]:
        if page.abs_src_path is None:  # a generated page
            continue
        with open(page.abs_src_path, encoding="utf-8") as f:
            text = f.read()
        for _, url in LINK.findall(text):
            relative = _outside_target(page.src_uri, url, docs_dir)
            if relative is None:
                continue
            path = os.path.join(os.path.dirname(os.path.dirname(docs_dir)), relative)
            uri = f"{REPO_PREFIX}/{relative}"
            if os.path.isfile(path) and files.get_file_from_path(uri) is None:
                files.append(File.generated(config, uri, abs_src_path=path))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    docs_dir = config["docs_dir"]
    depth = page.file.src_uri.count("/")

    def rewrite(match: re.Match[str]) -> str:
        relative = _outside_target(page.file.src_uri, match.group(2), docs_dir)
        if relative is None or files.get_file_from_path(f"{REPO_PREFIX}/{relative}") is None:
            return match.group(0)
        return match.group(1) + "../" * depth + f"{REPO_PREFIX}/{relative}"

    return LINK.sub(rewrite, markdown)
