// Planted for lint_layer_rule_planted (never compiled): the SSH layer reaching into the client
// layer above it.
#include "client/settings.hpp"
