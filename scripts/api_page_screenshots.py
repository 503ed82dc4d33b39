"""Screenshots of the subscription page for docs/screenshots/ (the README's
"Subscription API"): the walk of the page's browser test (``tests/api/page_walk.py``)
in headless chromium against a real ``xscl api`` on loopback, over a temporary home.

    python scripts/api_page_screenshots.py [OUT_DIR]     # default: docs/screenshots

Needs Debian's chromium and chromium-driver and the test extra (selenium); downloads
nothing. Writes api-page-list.png, api-page-error-as-you-type.png, api-page-results.png.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.api.browser import headless_chromium, missing  # noqa: E402
from tests.api.server import free_port, start_api  # noqa: E402
from xscl.service.api.tokens import TokenStore  # noqa: E402


def main(argv: list[str]) -> int:
    reason = missing()
    if reason is not None:
        print(f"cannot take screenshots: {reason}", file=sys.stderr)
        return 2
    from tests.api.page_walk import walk

    out = Path(argv[0]) if argv else ROOT / "docs" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch) / "home"
        token = TokenStore(home).create("alice")
        port = free_port()
        server = start_api(home, port)
        driver = headless_chromium(Path(scratch) / "profile", width=900, height=1000)
        try:

            def shoot(name: str) -> None:
                path = out / f"api-page-{name}.png"
                driver.save_screenshot(str(path))
                print(path)

            walk(driver, f"http://127.0.0.1:{port}", ("alice", token), home, shoot)
        finally:
            driver.quit()
            server.terminate()
            server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
