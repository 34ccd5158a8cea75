"""A page in the system's Chromium (Debian's ``chromium``, driven headless by Playwright; skipped with the reason
where either is missing), with the console errors and the dialogs it raised, for the tests that look at ragmeter's
pages."""

from __future__ import annotations

import shutil
from typing import Any

import pytest


def open_page(url: str) -> tuple[Any, list[str], list[str]]:
    """``url`` loaded in a new browser: the page, its console errors, the messages of the dialogs it opened (each
    dismissed). Close it with :func:`close_page`."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is in the test extra")
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        pytest.skip("no chromium on this machine (apt-get install -y chromium; .ci/run installs it where it can)")
    manager = sync_api.sync_playwright().start()
    browser = manager.chromium.launch(executable_path=executable, args=["--no-sandbox"])
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    errors: list[str] = []
    dialogs: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(url)
    page.wait_for_load_state("load")
    page.context.manager = manager  # stopped by close_page
    return page, errors, dialogs


def close_page(page: Any) -> None:
    manager = page.context.manager
    page.context.browser.close()
    manager.stop()
