"""What a job spec is and what it may be: the models, the one reader of spec files, the capability rules, the
instance catalog and the image table (both data), the mode table (what each distribution mode means to the
request, the SDK, the launcher and the rank table), the rank topology."""
