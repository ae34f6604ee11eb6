"""What every lesson uses: checked claims, exercises by id, parameters, devices, seeding, plots, upstream loading."""
