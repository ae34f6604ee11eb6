"""The hub service `progress` (/services/progress/): the class matrix over the learners' homes, for the admin only.

JupyterHub starts it (`python -m verlstudy.hub.progress_service DIR`) with its token and URL in the environment.
Every page view reads each learner's attempt log and lesson notebooks afresh (course.class_progress: verdicts and
the checker's message, never an answer; nothing executed) and renders the page `verlstudy progress --html` writes.

Who may see it is decided by the hub's own OAuth (jupyterhub.services.auth.HubOAuth): the service asks for the
scope `access:services!service=progress`, which the admin role holds and a learner's role does not, so a learner
gets 403 from the hub's authorize step (in a browser) or from here (with a token).
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from pathlib import Path
from urllib.parse import urlparse

from verlstudy.course import class_progress, class_progress_page
from verlstudy.hub import init

REFRESH_S = 30  # the page reloads itself this often


def class_view(folder: Path, now: dt.datetime | None = None) -> class_progress.ClassProgress:
    """Every learner of the hub in `folder`, read from `<home>/verlstudy` (a learner without it: no notebook)."""
    settings = init.load(folder)
    learners = {name: init.learner_home(settings, folder, name) / init.TARGET for name in settings.learners}
    lessons = class_progress.lesson_files()
    held = {nb.name for path in learners.values() if path.is_dir() for nb in path.glob("*.ipynb")}
    chosen = {name: lesson for name, lesson in lessons.items() if name in held} or lessons
    columns = {lesson: class_progress.exercises_of(lesson) for lesson in chosen.values()}
    layout = class_progress.Layout(Path("/"), learners)
    rows = [class_progress.read_learner(name, path, columns) for name, path in learners.items()]
    return class_progress.ClassProgress(layout, columns, rows, now or dt.datetime.now(dt.UTC), idle_minutes=15)


def make_app(folder: Path) -> object:
    """The tornado application: the page at the service prefix and the OAuth callback."""
    from jupyterhub.services.auth import HubOAuthCallbackHandler, HubOAuthenticated
    from tornado import web

    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "/services/progress/")

    class ProgressPage(HubOAuthenticated, web.RequestHandler):
        @web.authenticated
        def get(self) -> None:
            found = class_view(folder)
            self.set_header("Cache-Control", "no-store")
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.write(class_progress_page.page_html(found, REFRESH_S))

    class ProgressJSON(HubOAuthenticated, web.RequestHandler):
        @web.authenticated
        def get(self) -> None:
            found = class_view(folder)
            self.write(
                {
                    "learners": {
                        learner.name: {e: s.state for e, s in learner.statuses.items()} for learner in found.learners
                    }
                }
            )

    return web.Application(
        [
            (prefix, ProgressPage),
            (prefix + "progress.json", ProgressJSON),
            (prefix + "oauth_callback", HubOAuthCallbackHandler),
        ],
        cookie_secret=os.urandom(32),
    )


def main(argv: list[str] | None = None) -> int:
    """Serve the page on the URL JupyterHub gave this service until stopped."""
    from tornado.ioloop import IOLoop

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m verlstudy.hub.progress_service DIR (JupyterHub starts it)", file=sys.stderr)
        return 2
    folder = Path(args[0])
    url = urlparse(os.environ.get("JUPYTERHUB_SERVICE_URL", "http://127.0.0.1:8099"))
    app = make_app(folder)
    app.listen(url.port or 80, url.hostname or "127.0.0.1")
    IOLoop.current().start()
    return 0


if __name__ == "__main__":
    sys.exit(main())
