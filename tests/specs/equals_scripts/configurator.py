"""Written for smtrain's tests: replaces the running script's settings from `--key=value` arguments, one argument
each. An argument without `=` is refused with a bare assert, as the scripts validate warns about refuse
SageMaker's `--key value` pairs."""
import sys
from ast import literal_eval

for argument in sys.argv[1:]:
    lacks_equals = '=' not in argument
    assert not lacks_equals
    setting, text = argument.removeprefix('--').split('=', 1)
    try:
        globals()[setting] = literal_eval(text)
    except (ValueError, SyntaxError):
        globals()[setting] = text
