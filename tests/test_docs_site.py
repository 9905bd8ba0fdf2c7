"""The documentation site (rlbase/docs_site): its generated config and API pages cover what the
registry has; the site builds strictly (a dead link or a missing reference fails the build); no
internal link of the built site is dead; and in headless Chromium (Debian's ``chromium`` and
``chromium-driver``, driven by selenium) the home page, an algorithm page and the API page
render and the search finds ``learn``.

The build takes 30-60 s on 2 shared cores: the module builds it once per process (once in all
under pytest-xdist: the first worker builds it, under a lock, and the others reuse it).
"""

from __future__ import annotations

import fcntl
import functools
import html.parser
import http.server
import os
import posixpath
import shutil
import threading
import urllib.parse
import urllib.request

import pytest
import yaml

from rlbase import registry
from rlbase.docs_site import api_pages
from rlbase.docs_site import config as site_config

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="needs Debian's chromium and chromium-driver (apt-get install chromium "
           "chromium-driver; .ci/run installs them)")


def test_config_is_strict_and_checks_every_link():
    cfg = site_config("/tmp/unused")
    assert cfg["strict"] is True
    assert set(cfg["validation"].values()) == {"warn"}, "every link check must be an error"
    assert os.path.isfile(os.path.join(cfg["docs_dir"], "index.md"))
    # What `rlbase docs config` prints is YAML MkDocs reads.
    assert yaml.safe_load(yaml.safe_dump(cfg))["nav"] == cfg["nav"]


def test_rlbase_docs_is_a_cli_command(capsys):
    from rlbase.cli import main
    from rlbase.common.errors import RLBaseError

    with pytest.raises(RLBaseError, match="invalid choice: 'bogus'"):
        main(["docs", "bogus"])
    main(["docs", "config"])
    assert yaml.safe_load(capsys.readouterr().out)["strict"] is True


def test_api_pages_cover_the_registry_the_classes_and_common():
    pages = api_pages.pages()
    for alg in registry.available_algorithms():
        assert f"::: rlbase.{alg}.{alg}.learn" in pages["api/learn.md"], alg
        cls = registry.config_class(alg)
        assert f"::: {cls.__module__}.{cls.__qualname__}" in pages["api/configs.md"], alg
    import rlbase.compat.sb3 as sb3

    for name in sb3.__all__:
        assert f".{name}\n" in pages["api/classes.md"], name
    for module in ("loops", "envs", "networks", "buffers", "vec_env", "config"):
        assert f"api/common/{module}.md" in pages, module


def test_every_nav_entry_is_a_page():
    pages = set(api_pages.pages())

    def leaves(nav):
        for entry in nav:
            for value in entry.values():
                yield from (leaves(value) if isinstance(value, list) else [value])

    cfg = site_config("/tmp/unused")
    listed = list(leaves(cfg["nav"]))
    for page in listed:
        assert page in pages or os.path.isfile(os.path.join(cfg["docs_dir"], page)), page
    for alg in registry.available_algorithms():
        assert f"algorithms/{alg}.md" in listed, alg


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> str:
    pytest.importorskip("mkdocs", reason="needs the docs extra: pip install -e '.[docs]'")
    pytest.importorskip("material", reason="needs the docs extra: pip install -e '.[docs]'")
    pytest.importorskip("mkdocstrings", reason="needs the docs extra: pip install -e '.[docs]'")
    from rlbase.docs_site import build

    # Under xdist the workers share the parent of their temp folders: one build for all.
    root = tmp_path_factory.getbasetemp()
    root = root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root
    out = str(root / "docs_site")
    with open(str(root / "docs_site.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.isfile(os.path.join(out, "built")):
            assert build(out) == 0, "mkdocs build --strict failed (its warnings are above)"
            open(os.path.join(out, "built"), "w").close()
    return out


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.add(found["id"])
        for key in ("href", "src"):
            if found.get(key) and not (tag == "link" and found.get("rel") == "canonical"):
                self.links.append(found[key])


@functools.lru_cache(maxsize=None)
def _parse(path: str) -> _Links:
    parser = _Links()
    with open(path, encoding="utf-8") as f:
        parser.feed(f.read())
    return parser


def _target(site: str, page: str, link: str) -> tuple[str, str] | None:
    """The file an internal link of ``page`` points to and its fragment; None: external."""
    url = urllib.parse.urlsplit(link)
    if url.scheme or url.netloc or link.startswith(("mailto:", "javascript:")):
        return None
    if not url.path:  # "#anchor" on the same page
        return page, url.fragment
    # 404.html links from the site's root ("/cli/"): it is served at any depth.
    base = "" if url.path.startswith("/") else \
        posixpath.dirname(os.path.relpath(page, site).replace(os.sep, "/"))
    path = posixpath.normpath(posixpath.join(base, urllib.parse.unquote(url.path).lstrip("/")))
    assert not path.startswith(".."), f"{page}: {link} leaves the site"
    full = os.path.join(site, path)
    if os.path.isdir(full):
        full = os.path.join(full, "index.html")
    return full, url.fragment


def test_no_internal_link_is_dead(site: str):
    pages = [os.path.join(d, n) for d, _, names in os.walk(site) for n in names
             if n.endswith(".html")]
    assert len(pages) > 30
    dead, checked = [], 0
    for page in pages:
        for link in _parse(page).links:
            target = _target(site, page, link)
            if target is None:
                continue
            path, fragment = target
            checked += 1
            if not os.path.isfile(path):
                dead.append(f"{os.path.relpath(page, site)}: {link} (no file)")
            elif fragment and path.endswith(".html") and fragment not in _parse(path).ids:
                dead.append(f"{os.path.relpath(page, site)}: {link} (no anchor)")
    assert checked > 1000 and not dead, "\n".join(dead[:50])


@pytest.fixture(scope="module")
def server(site: str):
    handler = functools.partial(_QuietHandler, directory=site)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip("needs Debian's chromium and chromium-driver")
    webdriver = pytest.importorskip("selenium.webdriver",
                                    reason="needs the docs extra: pip install -e '.[docs]'")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,1600"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _main_content(driver) -> tuple[str, str]:
    """The rendered page's first heading and the text of its main content."""
    from selenium.webdriver.common.by import By

    article = driver.find_element(By.CSS_SELECTOR, "article.md-content__inner")
    return article.find_element(By.TAG_NAME, "h1").text, article.text


@pytest.mark.browser
@needs_chromium
@pytest.mark.parametrize("path, heading, expected", [
    ("", "rlbase documentation", "Algorithms"),
    ("algorithms/ppo/", "PPO", "cliprange"),
    ("api/learn/", "learn()", "rlbase.ppo.ppo.learn"),
])
def test_pages_render_in_chromium(browser, server, path, heading, expected):
    browser.get(server + path)
    title, text = _main_content(browser)
    assert title.startswith(heading), title
    assert expected in text and len(text) > 500, text[:500]


@pytest.mark.browser
@needs_chromium
def test_api_page_renders_learns_parameters(browser, server):
    from selenium.webdriver.common.by import By

    browser.get(server + "api/learn/")
    # mkdocstrings' parameter tables: one per algorithm, a row per parameter.
    tables = browser.find_elements(By.CSS_SELECTOR, "article table")
    assert len(tables) >= len(registry.available_algorithms())
    assert "total_timesteps" in tables[0].text


@pytest.mark.browser
@needs_chromium
def test_search_finds_learn(browser, server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(server)
    box = WebDriverWait(browser, 30).until(expected_conditions.element_to_be_clickable(
        (By.CSS_SELECTOR, "input.md-search__input")))
    box.click()
    box.send_keys("learn")
    results = WebDriverWait(browser, 60).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, ".md-search-result__item"))
    text = " ".join(r.text for r in results)
    assert "learn" in text.lower(), text[:500]
    meta = browser.find_element(By.CSS_SELECTOR, ".md-search-result__meta").text
    assert "matching" in meta.lower(), meta


def test_every_page_loads(server, site):
    # Each page over HTTP, as the browser gets it (the link test above checks the files).
    pages = [os.path.relpath(os.path.join(d, n), site).replace(os.sep, "/")
             for d, _, names in os.walk(site) for n in names if n == "index.html"]
    for page in pages:
        with urllib.request.urlopen(server + page, timeout=30) as response:
            assert response.status == 200 and b"md-content" in response.read(), page
