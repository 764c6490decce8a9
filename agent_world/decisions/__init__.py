"""The decision pipeline: how every brain that is not built in decides, off the tick.

``pipeline.Pipeline`` is the one owner (minds and triggers, pacing, the request queue,
worker threads, deadlines, the plan input, outcomes, fallback, figures); ``answerer`` says
what a kind of brain adds (a request in, a decision or a fault back); ``kinds.KINDS``
registers the kinds a session starts. docs/architecture.md, "Decisions off the tick".
"""
