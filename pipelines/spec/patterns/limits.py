"""Limits on the size and shape of an event pattern, checked when a pattern is parsed.

Every path that accepts a pattern parses it with :func:`pipelines.spec.patterns.compile_pattern`
(the filter transform's config, the pattern test endpoint, and the Spark filter itself), so
every path refuses the same patterns, with a :class:`PatternError` that names the limit and
where in the pattern it was exceeded (a 400 in the API). Amazon EventBridge caps a pattern at
2,048 characters (4,096 on request); Sluice's limits are looser but bounded: what a pattern
may cost to evaluate is linear in the event's size times these numbers.

============================  =========  ====================================================
limit                         value      what it counts
============================  =========  ====================================================
``MAX_PATTERN_BYTES``         16,384     the pattern as compact UTF-8 JSON
``MAX_PATTERN_DEPTH``         32         objects and arrays nested in the pattern document
                                         (the pattern object itself is level 1)
``MAX_STRING_LENGTH``         2,048      characters of any one string: field name or value
``MAX_MATCH_VALUES``          1,000      match values written in the pattern: each entry of
                                         a field's value array counts one, and each value an
                                         ``anything-but`` excludes one more
``MAX_RULES``                 64         rules the pattern expands to (``$or`` branches,
                                         fields accepting a value or absence)
``MAX_COMPILED_MATCHERS``     4,096      match values counted as above, summed over those
                                         rules (what the Spark filter compiles: each ``$or``
                                         branch repeats the fields it shares)
``MAX_WILDCARDS``             32         ``wildcard`` operands in the pattern (also inside
                                         ``anything-but``)
``MAX_WILDCARD_STARS``        32         unescaped ``*`` in one wildcard
============================  =========  ====================================================

Wildcards match in time linear in the value's length (see ``matchers.Wildcard``); the star
limit bounds the nesting of the Spark expression a wildcard compiles to.
"""

from __future__ import annotations

MAX_PATTERN_BYTES = 16_384
MAX_PATTERN_DEPTH = 32
MAX_STRING_LENGTH = 2_048
MAX_MATCH_VALUES = 1_000
MAX_RULES = 64
MAX_COMPILED_MATCHERS = 4_096
MAX_WILDCARDS = 32
MAX_WILDCARD_STARS = 32
