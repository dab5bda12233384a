"""smtrain's CPU stand-in for SageMaker's distributed training libraries (only ``dataparallel``, SMDDP).

The real package ships only in SageMaker's GPU training images; this one lets a script written for it run under
``smtrain local`` on a machine without GPUs, over gloo.
"""
