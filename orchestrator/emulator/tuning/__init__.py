"""`smtrain tune local`: a hyperparameter tuning job's trials run as local runs, chosen by its strategy."""
