"""A workshop on JupyterHub: `verlstudy hub init|users|up` for one machine, the progress service behind hub login.

init: the deployment (config, hub.json, private files, the student edition's git repository, system users);
users: learner names and their prefixed system accounts; up: run it in the foreground; progress_service: the
facilitator's matrix as the hub service `progress`; config_template: the jupyterhub_config.py `hub init` writes.
"""
