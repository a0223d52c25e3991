"""Gunicorn settings of the console's web server: ``gunicorn -c console/gunicorn.conf.py``.

Used by the Procfile (``make run``) and docker/entrypoint.sh; the command line there still
sets the address, workers and threads.

No server banner. Gunicorn writes ``Server: gunicorn`` on every response and has no setting
to change it (benoitc/gunicorn#825; an application's own ``Server`` header is sent as a
second one, not instead). The banner only tells a scanner which server's weaknesses to try,
so this file takes the line out of the headers gunicorn writes itself.
``tests/unit/console/test_security_headers.py`` starts gunicorn with this file and checks
the answer, so an upgrade that moves the header fails there, not silently.
"""

from __future__ import annotations

from gunicorn.http import wsgi

_gunicorn_default_headers = wsgi.Response.default_headers


def _default_headers_without_server(self: wsgi.Response) -> list[str]:
    return [
        line for line in _gunicorn_default_headers(self) if not line.lower().startswith("server:")
    ]


wsgi.Response.default_headers = _default_headers_without_server
