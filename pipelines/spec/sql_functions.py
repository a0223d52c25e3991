"""What a ``sql`` transform expression may call and read: allow-lists, by Spark name.

An editor's SQL runs inside a shared Spark driver, next to other channels, their secrets and
the host. So an expression may call only built-in Spark functions (Spark 4.2 names, lower
case) that compute a value from their arguments alone: they cannot reach the JVM (no
reflection, no class loading), the file system, other tables, the session or the environment.
Both checks read this list: the save-time check (:mod:`pipelines.spec.sql_expressions`,
sqlglot) and the driver's check with Spark's own parser (``pipelines.sql_guard``); a name
missing here is refused with "<name> is not an allowed function (see the SQL function
allow-list)".

What a user loses, and why:

* **Reflection and session functions**: ``reflect``, ``java_method``, ``try_reflect`` (call any
  Java method), ``current_user`` / ``user`` / ``session_user``, ``current_catalog``,
  ``current_database`` / ``current_schema``, ``current_path``, ``version`` (facts about the
  host and session), ``input_file_name`` and ``input_file_block_*`` (paths of the host).
* **Physical-layout functions**: ``spark_partition_id``, ``monotonically_increasing_id``
  (their values change on a replay, which breaks the exactly-counted ids events carry).
* **Aggregate, window and generator functions** (``count``, ``sum``, ``first``, ``row_number``,
  ``explode``, ``json_tuple``, ``stack``, ...), ``FILTER``/``OVER``/``WITHIN GROUP`` clauses and
  streaming windows (``window``, ``session_window``, ``window_time``): a ``sql`` transform maps
  one event to one event.
* **Sub-queries, table references and table-valued functions** (``SELECT``, ``EXISTS (SELECT
  ...)``, ``IN (SELECT ...)``, ``text.`/path```, ``read_files``, ``range``), ``IDENTIFIER(...)``,
  parameters, session variables, ``*``, qualified names (``catalog.db.fn(...)``, which would
  also reach persistent or Java/Hive UDFs) and ``${...}`` text (Spark substitutes variables,
  ``${env:NAME}`` included, into the text before parsing it).
* **Families left out for their reach or their lack of use here**: XML (``from_xml``,
  ``xpath*``: XML parsers resolve external entities), Avro and Protobuf (``from_protobuf``
  reads a descriptor file), sketches and bitmaps (``hll_*``, ``kll_*``, ``theta_*``,
  ``tuple_*``, ``bitmap_*``: only useful with aggregates), vectors and geospatial (``vector_*``,
  ``st_*``).
* Operators are syntax, not names here: arithmetic, comparison, ``AND``/``OR``/``NOT``, ``||``,
  bitwise operators, ``CASE``, ``CAST``/``TRY_CAST``/``::``, the VARIANT path ``data:a.b[0]``,
  ``[...]``, ``IN (...)``, ``BETWEEN``, ``LIKE``/``ILIKE``/``RLIKE``, ``IS [NOT] NULL``,
  ``IS [NOT] DISTINCT FROM``, intervals, typed literals and lambdas (``x -> ...``) are allowed.

An expression reads only the event columns (:data:`EVENT_COLUMNS`) and its lambdas'
variables. The module also holds what both checks refuse in the same words (the ``*_REFUSAL``
messages, :func:`check_text`, :func:`check_reference`); it imports neither sqlglot nor pyspark.

Adding a function: check that it is a Spark built-in (``SHOW FUNCTIONS``), scalar, and reads
nothing but its arguments; the tests check the first two against the live registry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipelines.spec.fieldpaths import ATTRIBUTE_NAMES

STRING_FUNCTIONS = frozenset(
    {
        "ascii",
        "base64",
        "bit_length",
        "btrim",
        "char",
        "char_length",
        "character_length",
        "chr",
        "collate",
        "collation",
        "concat_ws",
        "contains",
        "decode",
        "elt",
        "encode",
        "endswith",
        "find_in_set",
        "format_number",
        "format_string",
        "initcap",
        "instr",
        "is_valid_utf8",
        "lcase",
        "left",
        "len",
        "length",
        "levenshtein",
        "locate",
        "lower",
        "lpad",
        "ltrim",
        "luhn_check",
        "make_valid_utf8",
        "mask",
        "octet_length",
        "overlay",
        "position",
        "printf",
        "quote",
        "randstr",
        "regexp_count",
        "regexp_extract",
        "regexp_extract_all",
        "regexp_instr",
        "regexp_replace",
        "regexp_substr",
        "repeat",
        "replace",
        "right",
        "rpad",
        "rtrim",
        "sentences",
        "soundex",
        "space",
        "split",
        "split_part",
        "startswith",
        "substr",
        "substring",
        "substring_index",
        "to_binary",
        "to_char",
        "to_number",
        "to_varchar",
        "translate",
        "trim",
        "try_to_binary",
        "try_to_number",
        "try_validate_utf8",
        "ucase",
        "unbase64",
        "upper",
        "validate_utf8",
    }
)

MATH_FUNCTIONS = frozenset(
    {
        "abs",
        "acos",
        "acosh",
        "asin",
        "asinh",
        "atan",
        "atan2",
        "atanh",
        "bin",
        "bround",
        "cbrt",
        "ceil",
        "ceiling",
        "conv",
        "cos",
        "cosh",
        "cot",
        "csc",
        "degrees",
        "div",
        "e",
        "exp",
        "expm1",
        "factorial",
        "floor",
        "greatest",
        "hex",
        "hypot",
        "least",
        "ln",
        "log",
        "log10",
        "log1p",
        "log2",
        "mod",
        "negative",
        "pi",
        "pmod",
        "positive",
        "pow",
        "power",
        "radians",
        "rand",
        "randn",
        "random",
        "rint",
        "round",
        "sec",
        "sign",
        "signum",
        "sin",
        "sinh",
        "sqrt",
        "tan",
        "tanh",
        "try_add",
        "try_divide",
        "try_mod",
        "try_multiply",
        "try_subtract",
        "unhex",
        "uniform",
        "width_bucket",
    }
)

BITWISE_FUNCTIONS = frozenset(
    {
        "bit_count",
        "bit_get",
        "getbit",
        "shiftleft",
        "shiftright",
        "shiftrightunsigned",
    }
)

DATETIME_FUNCTIONS = frozenset(
    {
        "add_months",
        "convert_timezone",
        "curdate",
        "current_date",
        "current_time",
        "current_timestamp",
        "current_timezone",
        "date_add",
        "date_diff",
        "date_format",
        "date_from_unix_date",
        "date_part",
        "date_sub",
        "date_trunc",
        "dateadd",
        "datediff",
        "datepart",
        "day",
        "dayname",
        "dayofmonth",
        "dayofweek",
        "dayofyear",
        "extract",
        "from_unixtime",
        "from_utc_timestamp",
        "hour",
        "last_day",
        "localtimestamp",
        "make_date",
        "make_dt_interval",
        "make_interval",
        "make_time",
        "make_timestamp",
        "make_timestamp_ltz",
        "make_timestamp_ntz",
        "make_ym_interval",
        "minute",
        "month",
        "monthname",
        "months_between",
        "next_day",
        "now",
        "quarter",
        "second",
        "time_bucket",
        "time_diff",
        "time_from_micros",
        "time_from_millis",
        "time_from_seconds",
        "time_to_micros",
        "time_to_millis",
        "time_to_seconds",
        "time_trunc",
        "timestamp_micros",
        "timestamp_millis",
        "timestamp_seconds",
        "to_date",
        "to_time",
        "to_timestamp",
        "to_timestamp_ltz",
        "to_timestamp_ntz",
        "to_unix_timestamp",
        "to_utc_timestamp",
        "trunc",
        "try_make_interval",
        "try_make_timestamp",
        "try_make_timestamp_ltz",
        "try_make_timestamp_ntz",
        "try_to_date",
        "try_to_time",
        "try_to_timestamp",
        "unix_date",
        "unix_micros",
        "unix_millis",
        "unix_seconds",
        "unix_timestamp",
        "weekday",
        "weekofyear",
        "year",
    }
)
"""``current_date``, ``current_time``, ``current_timestamp``, ``now``, ``curdate``,
``localtimestamp`` and ``current_timezone`` are kept: the clock and the session time zone
tell nothing about the host that an event's own time does not."""

CONDITIONAL_FUNCTIONS = frozenset(
    {
        "and",
        "between",
        "coalesce",
        "equal_null",
        "if",
        "ifnull",
        "ilike",
        "in",
        "isnan",
        "isnotnull",
        "isnull",
        "like",
        "nanvl",
        "not",
        "nullif",
        "nullifzero",
        "nvl",
        "nvl2",
        "or",
        "regexp",
        "regexp_like",
        "rlike",
        "when",
        "zeroifnull",
    }
)

CAST_FUNCTIONS = frozenset(
    {
        "bigint",
        "binary",
        "boolean",
        "cast",
        "date",
        "decimal",
        "double",
        "float",
        "int",
        "smallint",
        "string",
        "time",
        "timestamp",
        "tinyint",
        "typeof",
    }
)

COLLECTION_FUNCTIONS = frozenset(
    {
        "array",
        "array_append",
        "array_compact",
        "array_contains",
        "array_distinct",
        "array_except",
        "array_insert",
        "array_intersect",
        "array_join",
        "array_max",
        "array_min",
        "array_position",
        "array_prepend",
        "array_remove",
        "array_repeat",
        "array_size",
        "array_union",
        "arrays_overlap",
        "arrays_zip",
        "cardinality",
        "concat",
        "element_at",
        "flatten",
        "get",
        "map",
        "map_concat",
        "map_contains_key",
        "map_entries",
        "map_from_arrays",
        "map_from_entries",
        "map_keys",
        "map_values",
        "named_struct",
        "reverse",
        "sequence",
        "shuffle",
        "size",
        "slice",
        "sort_array",
        "str_to_map",
        "struct",
        "try_element_at",
    }
)

HIGHER_ORDER_FUNCTIONS = frozenset(
    {
        "aggregate",
        "array_sort",
        "exists",
        "filter",
        "forall",
        "map_filter",
        "map_zip_with",
        "reduce",
        "transform",
        "transform_keys",
        "transform_values",
        "zip_with",
    }
)

JSON_AND_VARIANT_FUNCTIONS = frozenset(
    {
        "from_csv",
        "from_json",
        "get_json_object",
        "is_valid_variant",
        "is_variant_null",
        "json_array_length",
        "json_object_keys",
        "parse_json",
        "schema_of_csv",
        "schema_of_json",
        "schema_of_variant",
        "to_csv",
        "to_json",
        "to_variant_object",
        "try_parse_json",
        "try_variant_get",
        "variant_get",
    }
)

HASH_AND_CRYPTO_FUNCTIONS = frozenset(
    {
        "aes_decrypt",
        "aes_encrypt",
        "crc32",
        "hash",
        "md5",
        "sha",
        "sha1",
        "sha2",
        "try_aes_decrypt",
        "uuid",
        "xxhash64",
    }
)

URL_FUNCTIONS = frozenset(
    {
        "parse_url",
        "try_parse_url",
        "try_url_decode",
        "url_decode",
        "url_encode",
    }
)

VALIDATION_FUNCTIONS = frozenset({"assert_true", "raise_error"})
"""They fail the event (or the query) with the editor's own message: the errors policy decides."""

ALLOWED_FUNCTIONS: frozenset[str] = (
    STRING_FUNCTIONS
    | MATH_FUNCTIONS
    | BITWISE_FUNCTIONS
    | DATETIME_FUNCTIONS
    | CONDITIONAL_FUNCTIONS
    | CAST_FUNCTIONS
    | COLLECTION_FUNCTIONS
    | HIGHER_ORDER_FUNCTIONS
    | JSON_AND_VARIANT_FUNCTIONS
    | HASH_AND_CRYPTO_FUNCTIONS
    | URL_FUNCTIONS
    | VALIDATION_FUNCTIONS
)
"""Every Spark built-in function (lower-case name) an expression may call."""

SYNTAX_FUNCTIONS = frozenset({"try_cast"})
"""Call-shaped syntax that is not in Spark's function registry but allowed (``TRY_CAST(x AS
t)``, which Spark's parser turns into a cast)."""

LITERAL_FUNCTIONS = frozenset(
    {"current_date", "current_timestamp", "current_time", "current_user", "user", "session_user"}
    | {"grouping__id"}
)
"""Bare words Spark reads as a function call when no column has the name (its
``LiteralFunctionResolution``): they are judged as functions, against :data:`ALLOWED_FUNCTIONS`."""

DROPPED_FROM_SESSION = (
    "reflect",
    "java_method",
    "try_reflect",
    "input_file_name",
    "input_file_block_start",
    "input_file_block_length",
    "current_user",
    "user",
    "session_user",
    "current_catalog",
    "current_database",
    "current_schema",
    "current_path",
    "version",
)
"""Refused functions the driver also removes from its session's function registry (no code
of Sluice calls them), so even an expression that escaped both checks could not call them."""


def is_allowed_function(name: str) -> bool:
    """Whether an expression may call the function written ``name`` (one part, any case)."""
    return name.lower() in ALLOWED_FUNCTIONS or name.lower() in SYNTAX_FUNCTIONS


def refusal(name: str) -> str:
    """The field error for a call of ``name``."""
    return f"{name} is not an allowed function (see the SQL function allow-list)"


# -- sizes: functions whose result grows with an argument ------------------------------------


@dataclass(frozen=True)
class Argument:
    """What a size check knows of one argument of a call: its value when it is an integer
    or string literal (``None`` otherwise: a column, a call, anything computed per event)."""

    value: int | str | None = None


MAX_STRING = 10_000
"""Characters a size-capped string function may make (``repeat``, ``space``, ``lpad``…)."""
MAX_ELEMENTS = 10_000
"""Elements ``array_repeat`` and ``sequence`` may make."""
MAX_SCALE = 1_000
"""Digits a rounding scale or ``format_number`` may ask for."""
_WIDTH = re.compile(r"%(?:\d+\$)?[-#+ 0,(<]*(\d+)?(?:\.(\d+))?")
"""A ``printf`` conversion's width and precision."""


def check_sizes(name: str, arguments: list[Argument]) -> None:
    """Raise ``ValueError`` when a call of ``name`` could allocate without bound: a function
    whose result grows with an argument takes that argument as a literal within its cap
    (:data:`MAX_STRING`, :data:`MAX_ELEMENTS`, :data:`MAX_SCALE`), so no event's value can
    make it ask the JVM, shared by every channel of the driver, for gigabytes. Both checks
    (save time and the driver's) call it, with the arguments their parser found."""
    name = name.lower()
    values = [argument.value for argument in arguments]

    def literal(index: int, what: str, low: int, high: int) -> int:
        value = values[index] if index < len(values) else None
        if not isinstance(value, int) or not low <= value <= high:
            raise ValueError(
                f"{name}: its {what} must be a whole number from {low:,} to {high:,} written in "
                "the expression (not computed from the event): the driver is shared with "
                "other channels"
            )
        return value

    if name in ("repeat",):
        times = literal(1, "count", 0, MAX_STRING)
        text = values[0] if values else None
        if not isinstance(text, str) or len(text) * times > MAX_STRING:
            raise ValueError(
                f"repeat: the repeated text must be a string literal, and the result at most "
                f"{MAX_STRING:,} characters"
            )
    elif name == "space":
        literal(0, "length", 0, MAX_STRING)
    elif name in ("lpad", "rpad"):
        literal(1, "length", 0, MAX_STRING)
    elif name == "randstr":
        literal(0, "length", 0, MAX_STRING)
    elif name == "array_repeat":
        literal(1, "count", 0, MAX_ELEMENTS)
        if not values or values[0] is None:
            raise ValueError(
                "array_repeat: the repeated element must be a literal (each copy of an event's "
                "value would be stored)"
            )
    elif name == "sequence":
        bounds = values[:3]
        if len(bounds) < 2 or not all(isinstance(v, int) for v in bounds):
            raise ValueError(
                f"sequence: its start, stop and step must be whole numbers written in the "
                f"expression (not computed from the event; dates and times are not allowed: "
                f"their span cannot be checked), making at most {MAX_ELEMENTS:,} elements"
            )
        start, stop = int(bounds[0]), int(bounds[1])  # type: ignore[arg-type]
        step = int(bounds[2]) if len(bounds) > 2 else 1  # type: ignore[arg-type]
        if step == 0 or (stop - start) // step + 1 > MAX_ELEMENTS:
            raise ValueError(
                f"sequence: at most {MAX_ELEMENTS:,} elements, from whole-number literals "
                "(dates and times are not allowed: their span cannot be checked)"
            )
    elif name in ("printf", "format_string"):
        pattern = values[0] if values else None
        if not isinstance(pattern, str):
            raise ValueError(f"{name}: the format must be a string literal")
        for width, precision in _WIDTH.findall(pattern):
            if int(width or 0) > MAX_STRING or int(precision or 0) > MAX_STRING:
                raise ValueError(
                    f"{name}: a width or precision is at most {MAX_STRING:,} characters"
                )
    elif name == "format_number":
        if len(values) > 1 and not isinstance(values[1], str):
            literal(1, "number of decimals", 0, MAX_SCALE)
    elif name in ("round", "bround", "ceil", "ceiling", "floor") and len(values) > 1:
        literal(1, "scale", -MAX_SCALE, MAX_SCALE)


SIZE_CAPPED = frozenset(
    {"repeat", "space", "lpad", "rpad", "randstr", "array_repeat", "sequence", "printf"}
    | {"format_string", "format_number", "round", "bround", "ceil", "ceiling", "floor"}
)
"""The functions :func:`check_sizes` holds to literal sizes."""


# -- what both checks refuse, in the same words -------------------------------------------------

EVENT_COLUMNS = frozenset({*ATTRIBUTE_NAMES, "extensions", "data"})
"""The columns an expression may read (Spark matches names case-insensitively)."""

COLUMNS_HINT = "an expression reads the event columns " + ", ".join(
    (*ATTRIBUTE_NAMES, "extensions", "data")
)

SUBQUERY_REFUSAL = (
    "sub-queries and table references (SELECT, FROM, EXISTS (SELECT ...), IN (SELECT ...)) are "
    f"not allowed: {COLUMNS_HINT}"
)
AGGREGATE_REFUSAL = (
    "aggregate clauses (DISTINCT, FILTER, WITHIN GROUP) are not allowed: a sql transform "
    "computes each event on its own"
)
WINDOW_REFUSAL = (
    "window functions (... OVER ...) are not allowed: a sql transform computes each event on "
    "its own"
)
PARAMETER_REFUSAL = "parameters and variables (:name, ?, ${...}) are not allowed"
STAR_REFUSAL = "* is not allowed: name the columns you need"
IDENTIFIER_REFUSAL = "IDENTIFIER(...) is not allowed: write names as they are"
SUBSTITUTION_REFUSAL = (
    "'${' is not allowed: Spark would substitute a variable (such as ${env:NAME}) into the "
    "expression; write concat('$', '{') for the text"
)
MAX_LENGTH = 10_000


def check_text(expression: str) -> None:
    """Raise ``ValueError`` for what must be refused before any parser reads the text: its
    size, and ``${`` (Spark's variable substitution rewrites the text first)."""
    if len(expression) > MAX_LENGTH:
        raise ValueError(f"an expression is at most {MAX_LENGTH} characters")
    if "${" in expression:
        raise ValueError(SUBSTITUTION_REFUSAL)


def check_reference(name: str, bound: frozenset[str], *, single: bool) -> None:
    """``name`` starts a reference: an event column, a lambda variable or (alone) a literal
    function such as ``current_date``."""
    lower = name.lower()
    if lower in bound or lower in EVENT_COLUMNS:
        return
    if single and lower in LITERAL_FUNCTIONS:
        if lower in ALLOWED_FUNCTIONS:
            return
        raise ValueError(refusal(lower))
    raise ValueError(f"{name} is not an event column: {COLUMNS_HINT} (and lambda variables)")
