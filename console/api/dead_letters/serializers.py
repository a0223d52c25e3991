"""The dead-letter API's bodies: the list's query, a dead letter (summary and in full), the
list page, a redrive request and its result."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from console.selectors.dead_letters import DeadLetterFilters

MAX_IDS = 500
MAX_MESSAGE_IN_LIST = 500
"""A list shows this much of each message; the dead letter itself has all of it."""


class DeadLetterFilterSerializer(serializers.Serializer):
    """The filters of a list, and of a redrive of ``all`` that match."""

    error_class = serializers.CharField(
        required=False, max_length=200, help_text="Only this error class (exact), e.g. CastError."
    )
    stage = serializers.CharField(
        required=False,
        max_length=200,
        help_text="Only this stage (exact): source, transforms[1] (cast), sink…",
    )
    rule = serializers.CharField(required=False, max_length=200, help_text="A bus's rule (exact).")
    target = serializers.CharField(
        required=False, max_length=200, help_text="A bus's target, e.g. rules[0].sinks[1] (exact)."
    )
    since = serializers.DateTimeField(
        required=False, help_text="Dead letters from this time on (inclusive)."
    )
    until = serializers.DateTimeField(required=False, help_text="Dead letters before this time.")
    q = serializers.CharField(
        required=False, max_length=200, help_text="Text the error message contains (any case)."
    )

    def filters(self) -> DeadLetterFilters:
        return filters_of(self.validated_data)


def filters_of(data: dict[str, Any]) -> DeadLetterFilters:
    names = ("error_class", "stage", "rule", "target", "since", "until", "q")
    return DeadLetterFilters(**{name: data[name] for name in names if name in data})


class OriginSerializer(serializers.Serializer):
    topic = serializers.CharField(allow_null=True, help_text="The topic the record was read from.")
    partition = serializers.IntegerField(allow_null=True)
    offset = serializers.IntegerField(allow_null=True)
    timestamp = serializers.CharField(allow_null=True, help_text="The record's timestamp.")


class RedrivenSerializer(serializers.Serializer):
    run = serializers.CharField(help_text="The redrive run's id (channels/{name}/replays/{id}/).")
    at = serializers.DateTimeField(help_text="When it was redriven.")
    by = serializers.CharField(help_text="Who redrove it.")
    state = serializers.CharField(help_text="The run's state.")
    outcome = serializers.CharField(help_text='The run\'s outcome in words ("1 failed again…").')


class DeadLetterSummarySerializer(serializers.Serializer):
    """A dead letter as a list shows it."""

    id = serializers.CharField(
        help_text=(
            "Stable id: kafka:<topic>:<partition>:<offset>, files:<file>:<row> or "
            "jdbc:<row id, base64url> (where it is stored in the dead-letter target)."
        )
    )
    time = serializers.DateTimeField(
        allow_null=True, help_text="When it became a dead letter (written to the target)."
    )
    event_id = serializers.CharField(allow_null=True)
    stage = serializers.CharField()
    error_class = serializers.CharField()
    message = serializers.CharField()
    rule = serializers.CharField(allow_null=True)
    target = serializers.CharField(allow_null=True)
    origin = OriginSerializer()
    redrivable = serializers.BooleanField(
        help_text="It carries the original record, so it can be redriven."
    )
    redriven = RedrivenSerializer(
        allow_null=True,
        help_text=(
            "Its latest redrive (null: never redriven): when, by whom, the run and its "
            "outcome. A letter that fails again is a new dead letter, with a new id."
        ),
    )

    def to_representation(self, instance: Any) -> dict[str, Any]:
        body = letter_body(instance, self.context.get("redriven"))
        if len(body["message"]) > MAX_MESSAGE_IN_LIST:
            body["message"] = body["message"][:MAX_MESSAGE_IN_LIST] + "…"
        return body


class DeadLetterSerializer(DeadLetterSummarySerializer):
    """A dead letter in full: the error, the original record and the event."""

    payload = serializers.CharField(
        allow_null=True, help_text="The original record as the source read it (UTF-8 text)."
    )
    event = serializers.JSONField(
        allow_null=True, help_text="The event the failing stage received (null: never parsed)."
    )
    location = serializers.DictField(help_text="Where it is stored in the dead-letter target.")

    def to_representation(self, instance: Any) -> dict[str, Any]:
        return {
            **letter_body(instance, self.context.get("redriven")),
            "payload": instance.payload,
            "event": instance.event,
            "location": instance.location,
        }


def letter_body(letter: Any, redriven: dict[str, Any] | None = None) -> dict[str, Any]:
    """A letter's fields; ``redriven`` maps letter ids to their latest redrive
    (:class:`console.services.dead_letters.Redriven`)."""
    mark = (redriven or {}).get(letter.id)
    return {
        "id": letter.id,
        "time": letter.time.isoformat().replace("+00:00", "Z") if letter.time else None,
        "event_id": letter.event_id,
        "stage": letter.stage,
        "error_class": letter.error_class,
        "message": letter.message,
        "rule": letter.rule,
        "target": letter.target,
        "origin": {
            "topic": letter.origin_topic,
            "partition": letter.origin_partition,
            "offset": letter.origin_offset,
            "timestamp": letter.origin_timestamp,
        },
        "redrivable": letter.payload is not None,
        "redriven": None if mark is None else mark.to_json(),
    }


class DeadLetterTargetSerializer(serializers.Serializer):
    type = serializers.CharField(allow_null=True, help_text="The dead-letter sink's type.")
    location = serializers.CharField(help_text="Where the dead letters are (no secrets).")
    readable = serializers.BooleanField(help_text="The console can read them back.")
    note = serializers.CharField(help_text="Why not, when it cannot.")


class DeadLetterScanSerializer(serializers.Serializer):
    scanned = serializers.IntegerField(help_text="Stored dead letters read, before filtering.")
    limit = serializers.IntegerField(help_text="The most one list reads (per Kafka partition).")
    limit_reached = serializers.BooleanField(
        help_text="Older dead letters exist that this list did not look at."
    )


class DeadLetterPageSerializer(serializers.Serializer):
    """A page of a channel's dead letters, newest first, with what was looked at."""

    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = DeadLetterSummarySerializer(many=True)
    target = DeadLetterTargetSerializer()
    scan = DeadLetterScanSerializer()
    facets = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="The error classes, stages, rules and targets seen (for filter menus).",
    )


class RedriveRequestSerializer(DeadLetterFilterSerializer):
    """Either ``ids`` (the dead letters selected), or ``all: true`` with the list's filters."""

    ids = serializers.ListField(
        child=serializers.CharField(max_length=300),
        required=False,
        min_length=1,
        max_length=MAX_IDS,
        help_text=f"The ids of the dead letters to redrive (at most {MAX_IDS}).",
    )
    all = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Redrive every dead letter matching the filters (the newest 5000 at most).",
    )
    confirm = serializers.BooleanField(
        required=False,
        default=False,
        help_text=(
            "Write into the channel's live targets (GET replays/targets names them). "
            "Without it, a redrive into a live target is refused (400 on confirm) and "
            "nothing is written."
        ),
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        has_ids = "ids" in attrs
        if has_ids == bool(attrs.get("all")):
            raise serializers.ValidationError(
                {"ids": ["give either ids or all: true (with filters), not both or neither"]}
            )
        if has_ids and set(attrs) - {"ids", "all", "confirm"}:
            raise serializers.ValidationError(
                {"ids": ["filters apply to all: true only; selected ids are taken as they are"]}
            )
        return attrs


class RedriveResultSerializer(serializers.Serializer):
    topic = serializers.CharField(help_text="The redrive topic the originals were written to.")
    count = serializers.IntegerField(help_text="Records written (and redriven).")
    start_offsets = serializers.DictField(
        child=serializers.IntegerField(), help_text="First offset written, per partition."
    )
    end_offsets = serializers.DictField(
        child=serializers.IntegerField(), help_text="Offset after the last written, per partition."
    )
    run = serializers.DictField(
        allow_null=True, help_text="The redrive run: its id, kind and state."
    )
    skipped = serializers.DictField(
        child=serializers.CharField(), help_text="Selected ids not redriven, with why."
    )

    def to_representation(self, instance: Any) -> dict[str, Any]:
        run = instance.run
        return {
            "topic": instance.topic,
            "count": instance.count,
            "start_offsets": {str(k): v for k, v in instance.start_offsets.items()},
            "end_offsets": {str(k): v for k, v in instance.end_offsets.items()},
            "run": None
            if run is None
            else {
                "id": str(getattr(run, "id", getattr(run, "pk", ""))),
                "kind": str(getattr(run, "kind", "redrive")),
                "state": str(getattr(run, "state", "")),
            },
            "skipped": instance.skipped,
        }
