from .run import entry

entry()
