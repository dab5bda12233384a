"""Functions a test ships by reference: this module is a file, so the job imports it from the code directory."""

import os


def where_am_i(tag):
    return {"tag": tag, "host": os.environ.get("SM_CURRENT_HOST"), "rank": os.environ.get("OMPI_COMM_WORLD_RANK")}


def divide(rows):
    rows += 1
    return rows / 0
