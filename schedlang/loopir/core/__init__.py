"""The IR apart from its passes, so that passes, targets and the interpreter share one meaning."""
