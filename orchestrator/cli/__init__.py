"""The command line: thin click commands over the library; never imports torch or the SageMaker SDK."""
