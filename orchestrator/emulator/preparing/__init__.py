"""The plan turned into emulated instances: the run directory and every host's /opt/ml tree written from the
request, channels placed, the user's requirements installed, and everything checked before anything runs."""
