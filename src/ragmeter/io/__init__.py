"""Readers and writers for evaluation files."""

from ragmeter.io.formats.native import record_from_dict
from ragmeter.io.readers import FORMATS, FileCheck, check_file, detect_format, iter_records, read_records
from ragmeter.io.writers import ItemsWriter

__all__ = [
    "FORMATS",
    "FileCheck",
    "ItemsWriter",
    "check_file",
    "detect_format",
    "iter_records",
    "read_records",
    "record_from_dict",
]
