"""One exception tree for redline.

    RedlineError                 anything redline reports to a person or an agent
    ├── InputError               bad input: a value, a file or a flag to fix
    ├── LogParseError            a text that is not a vLLM boot log
    ├── LadderError              a ladder.yml that cannot be used as it is
    └── (targets add theirs below)

Every message says what to do next. Foreign errors (OSError, YAML, SSH) are
translated where they enter, with ``raise ... from exc``.
"""


class RedlineError(Exception):
    """Base of every error redline raises on purpose."""


class InputError(RedlineError):
    """A value, file or flag given to redline that it cannot use."""


class LogParseError(RedlineError):
    """A text that is not a vLLM boot log (or cannot be read)."""


class LadderError(RedlineError):
    """A ladder file that is missing, invalid, or asked to do something out of order."""
