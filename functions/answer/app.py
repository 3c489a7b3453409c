"""The answer function: the ask API (classify → retrieve → answer) as a container or Lambda.

Heavy objects are built once per container, at import, not per request.
"""

from assist.api.app import create_app
from assist.ask.build import build_engine
from assist.aws.clients import client
from assist.logs import configure
from assist.settings import Settings

settings = Settings.from_env()
configure(settings)
app = create_app(build_engine(settings, client("dynamodb", settings)))
