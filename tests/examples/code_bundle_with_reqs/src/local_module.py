"""A dummy Python module to check importing local files works OK"""
DUMMY_CONSTANT = 1
