"""Random event patterns and events for differential tests of the pattern evaluators."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RandomPatterns:
    """Patterns over ``keys`` whose leaves are drawn from ``operators``, and events over the
    same keys whose leaves are ``scalars``; nesting stops at depth 2."""

    keys: Sequence[str]
    scalars: Sequence[Any]
    operators: Sequence[Callable[[], Any]]
    scalar_share: float  # of event values below depth 3
    object_share: float  # of event values: objects up to here, arrays above
    min_object_keys: int
    or_share: float  # of pattern objects that get an $or of two more

    def value(self, rnd: random.Random, depth: int = 0) -> Any:
        roll = rnd.random()
        if depth > 2 or roll < self.scalar_share:
            return rnd.choice(self.scalars)
        if roll < self.object_share:
            count = rnd.randint(self.min_object_keys, 3)
            return {key: self.value(rnd, depth + 1) for key in rnd.sample(self.keys, count)}
        return [self.value(rnd, depth + 1) for _ in range(rnd.randint(0, 3))]

    def pattern(self, rnd: random.Random, depth: int = 0) -> dict[str, Any]:
        pattern: dict[str, Any] = {}
        for key in rnd.sample(self.keys, rnd.randint(1, 2)):
            if depth < 2 and rnd.random() < 0.5:
                pattern[key] = self.pattern(rnd, depth + 1)
            else:
                pattern[key] = [rnd.choice(self.operators)() for _ in range(rnd.randint(1, 2))]
        if depth < 2 and rnd.random() < self.or_share:
            pattern["$or"] = [self.pattern(rnd, depth + 1), self.pattern(rnd, depth + 1)]
        return pattern
