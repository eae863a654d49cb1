# E2B template for `bcb evaluate --execution e2b`: bcb's image as it is (image/Containerfile:
# the bcb binary, the eval env from the lock bcb embeds, the dataset and its ground truth, user
# `user` with home /home/user as E2B expects). Build and push the image first (docs/container.md),
# then, from the repository root:
#   e2b template build -c sandbox-templates/e2b.toml
# BCB_IMAGE is the tag in image/TAG (a test keeps them equal).
ARG BCB_IMAGE=registry.example.com/bcb:0.1.0
FROM ${BCB_IMAGE}
