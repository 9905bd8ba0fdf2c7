"""The library's own exception for a user's mistake.

Anything raised as :class:`RLBaseError` is bad input (an unknown name, a wrong space, a corrupt
file...). The CLI prints its message as one line and exits with status 2; any other exception is
a bug and keeps its traceback.
"""


class RLBaseError(ValueError):
    """A user's mistake, reported as one clear line naming the bad value and what is allowed."""


class NonFiniteError(RLBaseError):
    """A loss, observation or reward became NaN or infinite during training."""
