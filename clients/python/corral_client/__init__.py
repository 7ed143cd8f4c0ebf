"""corral_client: a client for `corral serve` (docs/clients.md), standard library only.

    from corral_client import Corral
    client = Corral()                      # $CORRAL_URL, $CORRAL_TOKEN
    with client.sandboxes.create() as sb:
        sb.run_code("x = 6 * 7")
        print(sb.run_code("x").text)       # 42
"""
from .client import Corral
from .errors import (BadRequest, Conflict, ConnectionFailed, CorralError, Forbidden, NotFound, PayloadTooLarge,
                     RateLimited, ServerError, Timeout, Unauthorized, Unavailable)
from .runs import Run, Runs
from .sandboxes import Command, Execution, ExecutionError, Sandbox

__version__ = "0.1.0"
__all__ = ["Corral", "Run", "Runs", "Sandbox", "Execution", "ExecutionError", "Command", "CorralError", "BadRequest",
           "Unauthorized", "Forbidden", "NotFound", "Conflict", "PayloadTooLarge", "RateLimited", "ServerError",
           "Unavailable", "ConnectionFailed", "Timeout"]
