"""Enrich transform: call an HTTP endpoint for each event (or batch of events) and merge the
answer into the event (EventBridge Pipes' enrichment step).

Three steps, the middle one in Python because it waits on the network:

1. **Before the call** (Spark SQL): the input (``input``: the whole event, ``data`` or one
   value) is written as JSON text. An event without that value fails (``MissingField``), and
   so does one whose data cannot take the answer (``NotAnObject``); neither is sent.
2. **The call** (a scalar Arrow UDF, iterator form, in the Python workers): only the input
   text, the event's id and the time its age counts from cross to Python, in Arrow batches;
   the events' other columns stay in the JVM and are zipped back with the answers. Per batch,
   the inputs the cache holds are answered from it, the rest are sent, ``batch_size`` per
   request, at most ``max_concurrency`` requests in flight per task, each with the retry
   policy, address guard and write-only auth of the ``http`` sink
   (:class:`pipelines.http_client.HttpCaller`). Answers are checked here: JSON (no NaN, no
   duplicate-key ambiguity: they are written back canonically), an array of the right length
   for a batch, an object when merged into data.
3. **After the call** (Spark SQL): an event whose call failed gets a ``failure`` (stage, error
   class: ``HttpStatus<code>``, ``ConnectionError``, ``Timeout``, ``TLSError``,
   ``ForbiddenAddress``, ``EventTooOld``, ``InvalidAnswer`` or ``AnswerTooLarge``, message
   with the method, URL, attempts and event id) and keeps its data; the others get the answer
   ``into`` their data. A failed event is never passed on unenriched: the error policy fails
   the query (``tolerance: none``) or routes it to the dead-letter target (``all``).

The UDF is non-deterministic to the optimizer, so Spark never evaluates it twice for a row
(nor pushes a later filter below it). Events that failed before this stage are not sent.

Cache. Answers are kept per Python worker process (Spark reuses workers across tasks and
batches), keyed on the stage's config and the input text, for ``cache.ttl_seconds``, at most
``cache.max_entries`` of them and :data:`CACHE_MAX_BYTES` of text, least recently used out
first. Failures are not cached. Without a cache every event is sent, even equal inputs.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import urllib3
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines import native
from pipelines.cloudevents import JSON_CONTENT_TYPE, event_json, select_event_columns
from pipelines.errors import Check, mark_failures
from pipelines.http_client import CallResult, HttpCaller
from pipelines.net import HTTP_ENRICH, AllowList, allow_list, check_url_host
from pipelines.plan import computed_once
from pipelines.spec.configs.enrich import WHOLE_EVENT, EnrichConfig
from pipelines.spec.fieldpaths import parse_field_path, parse_json_path
from pipelines.transforms.variants import (
    failure_message,
    is_object_sql,
    members_sql,
    read_sql,
    set_path_sql,
)

STAGE = "enrich"
USER_AGENT = "sluice-enrich/1"
MAX_ANSWER_BYTES = 4 << 20
"""The largest answer one request may get (a larger one fails as ``AnswerTooLarge``)."""
CACHE_MAX_BYTES = 64 << 20
"""Text (inputs and answers) one stage's cache keeps per Python worker process."""
_MAX_CACHES = 64
"""Caches (stages) one Python worker process keeps; the least recently used go first."""
TOTAL_CACHE_BYTES = 128 << 20
"""Text all the caches of one Python worker process keep together: the process is shared by
every channel of the driver, and 64 caches of 64 MiB each (4 GiB) would take it down. Past
it, the least recently used cache gives up its oldest answers first."""
RESULT_TYPE = "struct<answer: string, error_class: string, message: string>"
"""What the call gives each event: its answer as JSON text, or why there is none."""
_INPUT, _RESULT = "_enrich_input", "_enrich_result"
_TEXT, _ANSWER, _MEMBERS = "_enrich_text", "_enrich_answer", "_enrich_members"


def enrich_events(events: DataFrame, config: EnrichConfig) -> DataFrame:
    """Each event with the answer to its input merged ``into`` its data, or failed.

    Raises ``ValueError`` when the URL's host is refused by the address guard as this process
    sees it (``SLUICE_HTTP_ENRICH_ALLOW``): the driver checks again what the console did.
    """
    allowed = allow_list(HTTP_ENRICH)
    check_url_host(urlsplit(config.url).hostname or "", allowed, HTTP_ENRICH)
    if config.input != WHOLE_EVENT:
        events = events.withColumn(_INPUT, F.expr(read_sql(parse_json_path(config.input))))
    events = mark_failures(events, _input_checks(config))
    sent = F.when(F.col("failure").isNull(), _input_json(events, config))
    age = F.expr("unix_micros(coalesce(`time`, origin_timestamp))")
    events = events.withColumn(_RESULT, _enrich_udf(config, allowed)(sent, age, F.col("id")))
    events = events.withColumn(_TEXT, F.col(f"{_RESULT}.answer"))
    # computed once: later expressions read the parsed answer several times
    events = events.withColumn(_ANSWER, computed_once(native.try_parse_json(events, _TEXT)))
    events = mark_failures(events, _answer_checks(config))
    if config.merges:
        members = computed_once(F.expr(members_sql(f"`{_ANSWER}`")))
        events = events.withColumn(_MEMBERS, members)
        merged = (
            f"to_variant_object(map_concat(map_filter(coalesce({members_sql('`data`')}, "
            f"CAST(map() AS map<string,variant>)), (mk, mv) -> NOT map_contains_key("
            f"`{_MEMBERS}`, mk)), `{_MEMBERS}`))"
        )
    else:
        keys = parse_field_path(config.into, data_only=True)[1:]
        merged = set_path_sql("`data`", keys, f"`{_ANSWER}`")
    data = F.expr(f"CASE WHEN failure IS NULL THEN {merged} ELSE `data` END")
    return select_event_columns(events.withColumn("data", data))


def _input_json(events: DataFrame, config: EnrichConfig) -> Column:
    if config.input == WHOLE_EVENT:
        return event_json(native.json_zone(events))
    return native.to_json(events, _INPUT)


def _input_checks(config: EnrichConfig) -> list[Check]:
    data = "`data`"
    checks: list[Check] = []
    if config.input != WHOLE_EVENT:
        missing = f"{_INPUT} IS NULL OR is_variant_null({_INPUT})"
        problem = failure_message(STAGE, "the event has no value to send", config.input)
        checks.append((F.expr(missing), "MissingField", problem))
    if config.merges:
        absent = f"{data} IS NULL OR is_variant_null({data})"
        not_object = f"NOT ({absent} OR {is_object_sql(data)})"
    else:
        not_object = f"NOT {is_object_sql(data)}"
    problem = failure_message(STAGE, "data is not a JSON object", config.into)
    checks.append((F.expr(not_object), "NotAnObject", problem))
    return checks


def _answer_checks(config: EnrichConfig) -> list[Check]:
    error_class = F.col(f"{_RESULT}.error_class")
    unreadable = failure_message(STAGE, "Spark cannot read the answer as JSON", config.into)
    return [
        (error_class.isNotNull(), error_class, F.col(f"{_RESULT}.message")),
        (F.col(_ANSWER).isNull(), "InvalidAnswer", unreadable),
    ]


def _enrich_udf(config: EnrichConfig, allowed: AllowList) -> Callable[..., Column]:
    """The Arrow UDF ``(input text, age micros, id) -> RESULT_TYPE`` calling the endpoint."""
    from pyspark.sql.pandas.functions import ArrowUDFType, arrow_udf

    def enrich(batches: Iterator[tuple[Any, ...]]) -> Iterator[Any]:
        return enrich_arrow_batches(config, allowed, batches)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "prefer type hints": these are explicit
        udf = arrow_udf(enrich, RESULT_TYPE, ArrowUDFType.SCALAR_ITER)
    called: Callable[..., Column] = udf.asNondeterministic()
    return called


def enrich_arrow_batches(
    config: EnrichConfig, allowed: AllowList, batches: Iterator[tuple[Any, ...]]
) -> Iterator[Any]:
    """One task's Arrow batches of ``(inputs, ages, ids)`` -> struct arrays of results.

    One :class:`Enricher` (its connections and threads) serves the whole task.
    """
    import pyarrow as pa

    arrow_type = pa.struct(
        [("answer", pa.string()), ("error_class", pa.string()), ("message", pa.string())]
    )
    enricher = Enricher(config, allowed)
    try:
        for inputs, ages, ids in batches:
            results = enricher.enrich(inputs.to_pylist(), ages.to_pylist(), ids.to_pylist())
            rows = [None if r is None else r.as_dict() for r in results]
            yield pa.array(rows, type=arrow_type)
    finally:
        enricher.close()


# -- the calls (Python, on the executors) ------------------------------------------------


@dataclass(frozen=True)
class Enrichment:
    """One event's result: its answer (canonical JSON text), or an error class and message."""

    answer: str | None = None
    error_class: str | None = None
    message: str | None = None

    def as_dict(self) -> dict[str, str | None]:
        return {"answer": self.answer, "error_class": self.error_class, "message": self.message}


class Enricher:
    """Answers inputs for one task: from the cache, else from the endpoint, in order."""

    def __init__(self, config: EnrichConfig, allowed: AllowList) -> None:
        self._config = config
        connect, read = config.connect_timeout_seconds, config.read_timeout_seconds
        self._caller = HttpCaller(
            method=config.method,
            url=config.url,
            headers=config.headers,
            auth=config.auth,
            timeout=urllib3.Timeout(connect=connect, read=read),
            timeout_text=f"no answer within the timeouts (connect {connect:g} s, read {read:g} s)",
            retry=config.retry,
            allowed=allowed,
            user_agent=USER_AGENT,
            connections=config.max_concurrency,
            answer_bytes=MAX_ANSWER_BYTES,
        )
        self._cache = shared_cache(config) if config.cache.ttl_seconds > 0 else None
        workers = config.max_concurrency
        self._threads = ThreadPoolExecutor(workers, "sluice-enrich") if workers > 1 else None

    def close(self) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=True)
        self._caller.close()

    def enrich(
        self,
        inputs: Sequence[str | None],
        ages: Sequence[int | None],
        ids: Sequence[str | None],
    ) -> list[Enrichment | None]:
        """The result of each input (``None`` where the input is ``None``: not sent), in order.

        Equal inputs are sent once when the cache is on; without it each is sent.
        """
        results: list[Enrichment | None] = [None] * len(inputs)
        groups: dict[object, list[int]] = {}
        for index, text in enumerate(inputs):
            if text is None:
                continue
            if self._cache is not None:
                cached = self._cache.get(text)
                if cached is not None:
                    results[index] = Enrichment(answer=cached)
                    continue
            groups.setdefault(text if self._cache is not None else index, []).append(index)
        pending = list(groups.values())
        size = self._config.batch_size
        chunks = [pending[start : start + size] for start in range(0, len(pending), size)]

        def ask(chunk: list[list[int]]) -> list[Enrichment]:
            texts = [inputs[rows[0]] or "" for rows in chunk]
            known = [age for rows in chunk for age in (ages[i] for i in rows) if age is not None]
            return self._ask(texts, min(known) if known else None)

        answered = self._threads.map(ask, chunks) if self._threads else map(ask, chunks)
        for chunk, answers in zip(chunks, answered, strict=True):
            for rows, answer in zip(chunk, answers, strict=True):
                if answer.answer is not None and self._cache is not None:
                    self._cache.put(inputs[rows[0]] or "", answer.answer)
                for index in rows:
                    results[index] = _for_event(answer, ids[index])
        return results

    def _ask(self, texts: list[str], age_from_micros: int | None) -> list[Enrichment]:
        """Send ``texts`` in one request; one result per text."""
        batched = self._config.batch_size > 1
        body = f"[{','.join(texts)}]" if batched else texts[0]
        headers = {"Content-Type": JSON_CONTENT_TYPE, "Accept": JSON_CONTENT_TYPE}
        result = self._caller.call(body.encode("utf-8"), headers, age_from_micros)
        answers = self._answers(result, len(texts) if batched else None)
        if isinstance(answers, Enrichment):
            return [answers] * len(texts)
        return answers

    def _answers(self, result: CallResult, count: int | None) -> list[Enrichment] | Enrichment:
        """The answers a call gave (``count`` of them in an array, or one when ``None``), or
        the one failure every input of it gets."""
        if result.body is None:
            return Enrichment(error_class=result.error_class, message=result.message)
        try:
            value = json.loads(result.body.decode("utf-8"), parse_constant=_no_constant)
        except (UnicodeDecodeError, ValueError, RecursionError) as error:
            return self._invalid(f"the answer is not JSON ({_short(error)})")
        if count is None:
            return [self._checked(value)]
        if not isinstance(value, list) or len(value) != count:
            got = f"an array of {len(value)}" if isinstance(value, list) else type_name(value)
            return self._invalid(f"expected a JSON array of {count} answers, got {got}")
        return [self._checked(item) for item in value]

    def _checked(self, value: Any) -> Enrichment:
        if self._config.merges and not isinstance(value, dict):
            return self._invalid(
                f"the answer is {type_name(value)}, not a JSON object (into: data merges "
                "its members)"
            )
        try:
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            text.encode("utf-8")  # a lone surrogate escape cannot go to Spark
        except (ValueError, RecursionError) as error:
            return self._invalid(f"the answer is not JSON Spark can read ({_short(error)})")
        return Enrichment(answer=text)

    def _invalid(self, problem: str) -> Enrichment:
        message = self._caller.scrub(f"{self._caller.target}: {problem}")
        return Enrichment(error_class="InvalidAnswer", message=message)


def _for_event(answer: Enrichment, event_id: str | None) -> Enrichment:
    """``answer`` for one event: a failure's message names the stage and the event."""
    if answer.error_class is None:
        return answer
    return Enrichment(
        error_class=answer.error_class,
        message=f"{STAGE}: {answer.message} (event {event_id or 'without id'})",
    )


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _short(error: BaseException) -> str:
    text = str(error)
    return text if len(text) <= 120 else text[:119] + "…"


def type_name(value: Any) -> str:
    """``an object``, ``an array``, ``a string``... for a parsed JSON value."""
    if value is None:
        return "null"
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    return names.get(type(value), "a number")


# -- the cache (per Python worker process) ------------------------------------------------


class AnswerCache:
    """Answers by input text, for ``ttl`` seconds, bounded by entries and bytes (LRU).
    Thread-safe."""

    def __init__(
        self, ttl: float, max_entries: int, max_bytes: int = CACHE_MAX_BYTES, name: str = ""
    ) -> None:
        self.name = name
        """Its key among the process's caches (:func:`shared_cache`); empty: not shared."""
        self._ttl = ttl
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._entries: OrderedDict[str, tuple[float, str]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> str | None:
        """The answer kept for ``key``, if it has not expired."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            expires, answer = entry
            if expires <= time.monotonic():
                self._remove(key)
                return None
            self._entries.move_to_end(key)
            return answer

    def put(self, key: str, answer: str) -> None:
        """Keep ``answer`` for ``key``; the least recently used go when a bound is passed."""
        size = len(key) + len(answer)
        if size > self._max_bytes:
            return
        with self._lock:
            if key in self._entries:
                self._remove(key)
            self._entries[key] = (time.monotonic() + self._ttl, answer)
            self._bytes += size
            while len(self._entries) > self._max_entries or self._bytes > self._max_bytes:
                self._remove(next(iter(self._entries)))
        if self.name:
            _keep_to_budget(self)

    def _remove(self, key: str) -> None:
        _, answer = self._entries.pop(key)
        self._bytes -= len(key) + len(answer)

    @property
    def size(self) -> int:
        """Characters of text kept (inputs and answers)."""
        return self._bytes

    def shed(self, wanted: int) -> int:
        """Give up the oldest answers until ``wanted`` characters are freed, or none is left;
        the characters freed."""
        freed = 0
        with self._lock:
            while freed < wanted and self._entries:
                before = self._bytes
                self._remove(next(iter(self._entries)))
                freed += before - self._bytes
        return freed


_caches: OrderedDict[str, AnswerCache] = OrderedDict()
_caches_lock = threading.Lock()


def shared_cache(config: EnrichConfig) -> AnswerCache:
    """This process's cache of the stage ``config`` describes (one per distinct config: two
    stages, or an edited stage, never share answers)."""
    key = hashlib.sha256(config.model_dump_json().encode()).hexdigest()
    with _caches_lock:
        cache = _caches.get(key)
        if cache is None:
            cache = _caches[key] = AnswerCache(
                config.cache.ttl_seconds, config.cache.max_entries, name=key
            )
            while len(_caches) > _MAX_CACHES:
                _caches.popitem(last=False)
        else:
            _caches.move_to_end(key)  # used: the last to give up answers
        return cache


def cached_bytes() -> int:
    """Characters of text all this process's caches keep."""
    with _caches_lock:
        caches = list(_caches.values())
    return sum(cache.size for cache in caches)


def _keep_to_budget(used: AnswerCache) -> None:
    """``used`` was just written to (the most recently used now): hold every cache of the
    process together to :data:`TOTAL_CACHE_BYTES`, the least recently used cache giving up
    its oldest answers first, ``used`` last."""
    with _caches_lock:
        if used.name in _caches:
            _caches.move_to_end(used.name)
        caches = list(_caches.values())
    over = sum(cache.size for cache in caches) - TOTAL_CACHE_BYTES
    for cache in caches:  # least recently used first
        if over <= 0:
            return
        over -= cache.shed(over)
        if over <= 0:
            return
