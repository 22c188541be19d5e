"""The process: settings, the Starlette app and its lifespan, the CLI, the embedded MongoDB."""

from server.app import create_app
from server.embedded_mongodb import EmbeddedMongoDB, EmbeddedMongoDBError
from server.settings import Settings

__all__ = ["EmbeddedMongoDB", "EmbeddedMongoDBError", "Settings", "create_app"]
