"""Talking to agents: interviews (``/ask``) and surveys (``/survey``), answered off the tick
by each agent's own brain (``decisions/interview.py``) or plainly from its state.

    owner.py    Talk: the session's interviews and surveys, their bounds, their inputs
    plain.py    the plain answer, made from an agent's state
    surveys.py  survey filters, rows and the table written to the save folder
"""

from agent_world.talk.owner import Interview, Talk, TalkError
from agent_world.talk.surveys import Filter, FilterError, Survey

__all__ = ["Filter", "FilterError", "Interview", "Survey", "Talk", "TalkError"]
