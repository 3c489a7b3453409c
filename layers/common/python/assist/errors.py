"""The base of every error whose message is meant for the person running the engine."""


class AssistError(Exception):
    """Raised with a message that says what is wrong and what to do about it."""
