"""Users' brains on the decision pipeline: their answerer (Python brains and sandboxed
policies), the registry that loads them, and the processes that run them
(``brains.processes``). What a brain imports is ``agent_world.agents``."""
