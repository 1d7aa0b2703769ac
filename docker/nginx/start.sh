#!/bin/sh
# The reverse proxy in front of the web (docker/compose.yaml, service `proxy`, on the official
# nginx image): writes nginx's site for this deployment from the files beside this script, then
# runs nginx in the foreground.
#
# With a certificate and its key mounted at $TLS_DIR/tls.crt and tls.key (compose mounts
# docker/tls/ there), https ends TLS and http redirects to it; without them, plain http only.
# The body limits follow the web's settings, read from the same environment:
# EVALSERVER_MAX_UPLOAD_BYTES (client_max_body_size: it plus 1 MiB for the form) and
# EVALSERVER_UPLOAD_STALL_TIMEOUT (client_body_timeout).
#
# The client's address and scheme the web is told are this connection's own. The plain http
# site believes an outer proxy's X-Forwarded-For (its last address) and X-Forwarded-Proto only
# on connections from PROXY_TRUSTED_OUTER_PROXIES: comma-separated addresses or networks of a
# TLS proxy in front (as nginx sees them: for one on the Docker host, the compose network's
# gateway); none by default (docs/operators/https.md).
#
#   start.sh            write the site, then exec nginx (arguments go to nginx)
#   start.sh --render   only write it (tests/deploy/test_proxy.py checks it with nginx -t)
#
# Where it writes and what it proxies to, for running outside the image:
#   NGINX_CONF_DIR  (/etc/nginx/conf.d) the site goes to default.conf there, replacing the
#                   image's; the files it includes to evalserver/ below it
#   EVALSERVER_UPSTREAM (web:8000), NGINX_RESOLVER (127.0.0.11, Docker's DNS),
#   NGINX_HTTP_PORT (80), NGINX_HTTPS_PORT (443), TLS_DIR (/etc/nginx/tls)
set -eu
here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)
conf_dir=${NGINX_CONF_DIR:-/etc/nginx/conf.d}
helpers=$conf_dir/evalserver
tls_dir=${TLS_DIR:-/etc/nginx/tls}

# whole numbers, as the settings read them (underscores allowed); a bad one stops the proxy
number() {
    value=$(printf '%s' "$2" | tr -d '_ ')
    case $value in
        '' | *[!0-9]*)
            echo "start.sh: $1=$2 is not valid: expected an integer" >&2
            exit 2
            ;;
    esac
    printf '%s' "$value"
}
max_upload=$(number EVALSERVER_MAX_UPLOAD_BYTES "${EVALSERVER_MAX_UPLOAD_BYTES:-536870912}")
stall=$(number EVALSERVER_UPLOAD_STALL_TIMEOUT "${EVALSERVER_UPLOAD_STALL_TIMEOUT:-30}")
http_port=$(number NGINX_HTTP_PORT "${NGINX_HTTP_PORT:-80}")
https_port=$(number NGINX_HTTPS_PORT "${NGINX_HTTPS_PORT:-443}")
# The outer proxies, written into nginx's configuration: IPv4 or IPv6 addresses and networks
# only (digits, dots, colons, slashes; hexadecimal with a colon), empty entries skipped, as the
# web's settings read EVALSERVER_TRUSTED_PROXIES; nginx -t checks each is a valid one.
outer_proxies=${PROXY_TRUSTED_OUTER_PROXIES:-}
outer_real_ip=''
outer_geo=''
set -f  # no file names from a `*` in the value
IFS=,
for outer in $outer_proxies; do
    outer=$(printf '%s' "$outer" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//')
    case $outer in
        '') continue ;;
        *:*) pattern='*[!0-9A-Fa-f:./]*' ;;
        *) pattern='*[!0-9./]*' ;;
    esac
    # shellcheck disable=SC2254  # the pattern is meant to be one
    case $outer in
        $pattern | */*/*)
            echo "start.sh: PROXY_TRUSTED_OUTER_PROXIES=$outer_proxies is not valid: expected" \
                "comma-separated IP addresses or networks such as 172.18.0.1,10.0.0.0/8" >&2
            exit 2
            ;;
    esac
    outer_real_ip="${outer_real_ip:+$outer_real_ip }set_real_ip_from $outer;"
    outer_geo="${outer_geo:+$outer_geo }$outer 1;"
done
unset IFS
set +f
upstream=${EVALSERVER_UPSTREAM:-web:8000}
resolver=${NGINX_RESOLVER:-127.0.0.11}  # Docker's embedded DNS

if [ -s "$tls_dir/tls.crt" ] && [ -s "$tls_dir/tls.key" ]; then
    site=https
else
    site=http
fi

render() {
    sed -e "s|@DIR@|$helpers|g" -e "s|@UPSTREAM@|$upstream|g" \
        -e "s|@BODY_LIMIT@|$((max_upload + 1048576))|g" -e "s|@MAX_UPLOAD@|$max_upload|g" \
        -e "s|@BODY_TIMEOUT@|$stall|g" -e "s|@HTTP_PORT@|$http_port|g" \
        -e "s|@HTTPS_PORT@|$https_port|g" -e "s|@TLS_DIR@|$tls_dir|g" \
        -e "s|@RESOLVER@|$resolver|g" -e "s|@OUTER_REAL_IP@|$outer_real_ip|g" \
        -e "s|@OUTER_GEO@|$outer_geo|g" "$1" >"$2"
}
mkdir -p "$helpers"
cp "$here/proxy.conf" "$helpers/proxy.conf"
render "$here/common.conf.template" "$helpers/common.conf"
render "$here/locations.conf.template" "$helpers/locations.conf"
render "$here/$site.conf.template" "$conf_dir/default.conf"
if [ "$site" = http ] && [ -n "$outer_geo" ]; then
    believed="; believing the outer proxies $(printf '%s' "$outer_geo" | sed 's/ 1;/,/g; s/,$//')"
else
    believed=''
fi
echo "start.sh: $site site written to $conf_dir/default.conf (proxying to $upstream$believed)" >&2

if [ "${1:-}" = --render ]; then
    exit 0
fi
exec nginx -g 'daemon off;' "$@"
