"""``kubectl aicr version``: the plugin's version and the Python running it (cli.version_text)."""

from .. import cli, output


def run(invocation):
    output.say(cli.version_text())
    return 0
