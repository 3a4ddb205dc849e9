"""(to be written)"""
FUNCTIONS = {}
METHODS = {}
