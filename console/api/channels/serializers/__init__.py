"""The channels area's serializers, one module per thing they represent:

* :mod:`.channel` - the channel as read and written (spec, restart policy, labels);
* :mod:`.status` - its status: connector, tasks, counts, health;
* :mod:`.operations` - the requests and answers of its operations (lifecycle, restart,
  deploy, preview);
* :mod:`.revisions` - its revisions, their differences and its lifecycle events.
"""
