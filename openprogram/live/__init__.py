"""Sessions and runs in the browser, live: `openprogram sessions serve STORE` (server.py:
who may ask, the pages, the event streams fed by Session.events(); page.py: the HTML
around display's DAG view). Start at LiveServer.
"""

from openprogram.live.server import LiveServer

__all__ = ["LiveServer"]
