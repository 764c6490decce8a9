"""Training: policies that improve from measured results (docs/policies.md, "Training").

A generator (``generators``: an LLM, or templates that mutate a policy's constants) writes a
new version from the best so far and its training bundle (``bundle``); the version is checked
in the sandbox and evaluated over seeds with the evaluation harness, and accepted only when
it measurably does better (``trainer``). ``python main.py train`` (``command``) and the web
API (``POST /api/train``) run the same ``Trainer``.
"""
