NAME = "spin"
DESCRIPTION = "Spins forever: the step budget stops it."
VERSION = 1
PARENT = None


def decide(obs, memory):
    while True:
        pass
