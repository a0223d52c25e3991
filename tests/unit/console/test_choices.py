from __future__ import annotations

from console.choices import ConnectorState, PluginKind, TargetState, WorkerState
from pipelines.spec import PLUGIN_KINDS
from runtime_adapter import states


def test_connector_states_mirror_the_runtime():
    assert set(ConnectorState.values) == {state.value for state in states.State}


def test_target_states_mirror_the_runtime():
    assert set(TargetState.values) == {state.value for state in states.TargetState}


def test_worker_states_mirror_the_runtime():
    assert set(WorkerState.values) == {state.value for state in states.WorkerState}


def test_plugin_kinds_mirror_the_catalogue():
    assert PluginKind.values == list(PLUGIN_KINDS)
