"""Which DBC signals play the speed and APP roles, and the fast codec for them, tested against cantools."""
