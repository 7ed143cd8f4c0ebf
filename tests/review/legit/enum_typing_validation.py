import json
from enum import Enum
from typing import Iterator, NamedTuple, Optional


class Kind(Enum):
    LOGIN = "login"
    VIEW = "view"
    SEARCH = "search"
    PURCHASE = "purchase"
    LOGOUT = "logout"


class Event(NamedTuple):
    user: str
    kind: Kind
    amount: Optional[float]


def load(path: str) -> Iterator[Event]:
    with open(path) as f:
        for n, line in enumerate(f, 1):
            raw = json.loads(line)
            if raw["event"] == "purchase" and raw["amount"] is None:
                raise ValueError(f"line {n}: purchase without amount")
            yield Event(raw["user"], Kind(raw["event"]), raw["amount"])


events = list(load("data/events.jsonl"))
print({k.name: sum(e.kind is k for e in events) for k in Kind})
