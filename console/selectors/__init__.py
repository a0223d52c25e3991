"""Read-only queries of the control plane: what the API, the admin and the commands show.

Nothing here changes state (that is :mod:`console.services`, which may call these); a view
calls a selector to read and a service to change. Selectors never import services
(an import-linter contract); the errors both raise are in :mod:`console.errors`.

* :mod:`.channels` - channels for the lists, their revisions, lifecycle events and token state;
* :mod:`.audit_trail` - the audit trail, newest first;
* :mod:`.cluster` - the cluster view, read live from the runtime;
* :mod:`.deploys` - what deploying a channel's saved revision would do;
* :mod:`.specs` - the plugin catalogue, spec and pattern checks, secret redaction (pure).
"""
