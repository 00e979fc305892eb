"""The writing style learned from the owner's sent Gmail: connecting, sampling, describing, saving.

Nothing from an email is kept: the samples live in memory for one run and reach only the
memory model; what stays is the style note and the run's counts.
"""
