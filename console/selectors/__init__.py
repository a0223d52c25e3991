"""Read-only queries of the control plane: what the API, the admin and the commands show.

Nothing here changes state (that is :mod:`console.services`, which may call these); a view
calls a selector to read and a service to change. Selectors never import services
(an import-linter contract); the errors both raise are in :mod:`console.errors`.

* :mod:`.channels` - channels for the lists, their revisions, lifecycle events and token state;
* :mod:`.audit_trail` - the audit trail, newest first;
* :mod:`.cluster` - the cluster view, read live from the runtime;
* :mod:`.deploys` - what deploying a channel's saved revision would do;
* :mod:`.specs` - the plugin catalogue, spec and pattern checks, secret redaction (pure);
* :mod:`.health` - a channel's health summary, its rules a pure function of what is recorded;
* :mod:`.history` - a channel's metrics over time, asked of the time-series store (the lag
  trend's answer is kept in memory for a few seconds);
* :mod:`.restart_policy` - a channel's restart policy as a value: its delays and description;
* :mod:`.cloudevents` - CloudEvents 1.0 over HTTP: a request parsed into events (pure).
"""
