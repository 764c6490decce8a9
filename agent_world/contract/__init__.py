"""The brain contract: what every brain reads and answers, and nothing heavy.

``Observation`` (what an agent knows at a tick), ``Decision`` (an action, its arguments and
why), the brain tiers a user subclasses (``SimpleBrain``, ``Brain``, ``LLMBrain``, with
their memories), the JSON schemas of all of it, the text answer a model gives
(``answer``) and ``PlanInput``, the one form in which any brain's decision reaches the
world. The LLM layer, users' brains, sandboxed policies and remote agents all build on this
package; it builds on the core alone. Users import it as ``agent_world.agents``.
"""

from agent_world.contract.brains import Brain, BrainFault, BrainLLM, SimpleBrain, sensible_args
from agent_world.contract.decision import Decision, DecisionError, as_plan
from agent_world.contract.observation import Observation, observe
from agent_world.contract.plan import PlanInput

__all__ = ["Brain", "BrainFault", "BrainLLM", "Decision", "DecisionError", "Observation",
           "PlanInput", "SimpleBrain", "as_plan", "observe", "sensible_args"]
