"""The demo channel ``make run`` seeds on first start, so a newcomer sees events move at once.

generator (demo orders) → filter (EU orders over 100) → CloudEvents attributes → preview.
"""

from __future__ import annotations

DEMO_CHANNEL = "demo-orders"

DEMO_SPEC = {
    "source": {"type": "generator", "config": {"rate": 5}},
    "transforms": [
        {
            "type": "filter",
            "config": {
                "pattern": {
                    "data": {
                        "region": [{"prefix": "eu-"}],
                        "amount": [{"numeric": [">", 100]}],
                    }
                }
            },
        },
        {
            "type": "cloudevents",
            "config": {
                "action": "set",
                "attributes": {"type": "demo.order.eu", "subject": {"field": "data.order_id"}},
            },
        },
    ],
    "sink": {"type": "preview", "config": {"max_events": 50}},
}

#: True in every state (it is shown while the channel runs as much as while it is stopped),
#: so it says what the channel does, not what to press.
DEMO_DESCRIPTION = (
    "A demo: synthetic orders (5 per second); EU orders over 100 are kept and typed "
    "demo.order.eu. While it runs, the live tail shows the newest 50."
)

#: What earlier releases seeded; ``seed_demo`` replaces it (never a description a user wrote).
OLD_DEMO_DESCRIPTIONS = (
    "A demo: synthetic orders (5 per second), EU orders over 100 kept and typed "
    "demo.order.eu, the newest 50 shown in the live tail. Press Start.",
)
