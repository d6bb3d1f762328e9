"""`laya ps`, `laya load`, `laya unload`: the admin API of a running engine, from the shell."""
