// Planted for lint_layer_rule_planted (never compiled): the SSH layer reaching into the client
// layer beside it.
#include "client/settings.hpp"
