"""How a run ended, said as SageMaker says it: the failure reason (the failing rank's exception first) and the
`--smoke` verdict."""
