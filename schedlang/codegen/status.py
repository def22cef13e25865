"""The statuses a generated CPU function returns, shared by the code generator that writes them
and the runtime that reads them (which imports no code generator)."""

OK = 0
OUT_OF_MEMORY = 1
